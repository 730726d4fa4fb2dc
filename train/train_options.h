// Everything `mixgpt train` is told, as plain values (filled by cli/train_command.cpp from flags
// and TOML), and the resolved plan derived from it: model shape, accumulation steps, step count,
// schedule, optimizer and loss-scaling settings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/ops.h"
#include "kernels/precision.h"
#include "model/config.h"
#include "model/fp8_linears.h"
#include "model/model_options.h"
#include "tokenizer/loader.h"
#include "train/loss_scaling.h"
#include "train/lr_schedule.h"
#include "train/muon_step.h"

namespace mixgpt {

enum class OptimizerKind { adamw, muon };
OptimizerKind parse_optimizer(const std::string& name);  // throws Error on an unknown name
const char* optimizer_name(OptimizerKind kind);

struct TrainOptions {
    ModelOptions model;  // preset, family and overrides (model/model_options.h)

    // data and batch
    std::string dataset;                 // a prepared dataset (a folder or a .h5 file); a mixture's first
    std::vector<DatasetSource> mixture;  // two or more datasets with weights (train/README.md), or empty
    int batch_size = 4;                  // B: sequences per micro-step on each rank
    int seq_len = 256;                   // T (also the model's max_seq_len)
    bool align_documents = false;        // training windows start at documents (tokenizer/split_windows.h)
    int64_t total_batch_tokens = 0;      // tokens per optimizer step over all ranks; 0: B*T*ranks
    int64_t steps = 0;                   // optimizer steps; 0: token_budget / total batch
    int64_t token_budget = 0;

    // learning-rate schedule
    double learning_rate = 6e-4;
    int64_t warmup_steps = 0;
    LrDecay lr_decay = LrDecay::cosine;
    double final_lr_fraction = 0.1;
    double decay_fraction = 0.2;

    // AdamW; weight decay applies to matrices only
    double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8, weight_decay = 0.1;
    double grad_clip = 1.0;            // max global gradient norm; <= 0: no clipping
    bool stochastic_rounding = false;  // bf16 working copy only
    double z_loss = 0;                 // the objective gains z_loss * logsumexp(logits)^2 per token; 0: off

    // optimizer: AdamW for everything, or Muon for the blocks' matrices and AdamW for the rest
    // (train/parameter_groups.h; train/README.md, "Optimizers")
    OptimizerKind optimizer = OptimizerKind::adamw;
    double muon_lr = 0.02;  // peak
    double muon_momentum = 0.95;
    bool muon_nesterov = true;
    int muon_ns_steps = 5;
    DType muon_ns_dtype = DType::bf16;
    double muon_weight_decay = 0;
    // Muon's AdamW groups; unset: muon_embedding_lr and muon_head_lr
    std::optional<double> embedding_lr, head_lr;

    // precision
    Precision precision = Precision::fp32;
    Recompute recompute = Recompute::none;
    std::string loss_scale = "auto";  // auto | dynamic | static:<value> | none
    int loss_scale_growth_interval = 2000;
    int max_bad_steps = 20;  // consecutive non-finite steps before the run stops
    // The loss-spike guard (train/spike_guard.h): a step whose loss or gradient norm lies more than
    // skip_spikes standard deviations above the mean of the last spike_window applied steps is not
    // applied; max_spike_skips such steps in a row stop the run. 0: off.
    double skip_spikes = 0;
    int spike_window = 100;
    int max_spike_skips = 10;
    // Every telemetry_interval-th step is measured (train/telemetry.h) and written to metrics.jsonl
    // as a telemetry record; 0: off. Changes no result of the run.
    int telemetry_interval = 0;
    Fp8Options fp8;          // --precision fp8 only (model/fp8_linears.h)

    // run
    uint64_t seed = 1337;
    std::optional<uint64_t> data_seed;  // the data order's seed; unset: `seed`
    std::string device = "cpu";
    int device_index = 0;
    int threads = 0;                  // CPU threads; 0: OpenMP's default
    double peak_tflops = 0;           // > 0: the device's peak for MFU, else model/flops.h's table
    int64_t eval_interval = 0;        // steps between evaluations; 0: only after the last step
    int64_t eval_batches = 0;         // validation batches per evaluation; 0: the whole split
    int64_t checkpoint_interval = 0;  // steps between checkpoints; 0: only after the last step
    int keep_checkpoints = 3;         // the newest K are kept
    std::string output_dir = "runs/train";
    // "": off; else a folder that receives a TensorBoard event file of the run's metrics, a new one
    // per start or resume (train/tensorboard_metrics.h)
    std::string tensorboard_dir;
    // "": start fresh (refused when the output directory holds another run, unless overwrite);
    // "auto": the newest valid checkpoint, an error when there is none; "if-present": the same, but
    // a fresh start when the directory has no checkpoint at all (requeued jobs); else a file.
    std::string resume;
    bool overwrite = false;        // move the output directory's run into replaced-<time>/ first
    bool allow_nonfinite = false;  // resume from weights or moments that are NaN/Inf anyway
    bool verify_data = false;      // every shard's SHA-256 checked at start, not each at its first read
    bool dry_run = false;          // print the memory plan for each recompute policy and stop
    // Multiple-choice tasks evaluated during training (train/task_eval.h): "hellaswag:FILE" or "mc:FILE"
    std::vector<std::string> task_evals;
    int64_t task_eval_interval = 0;  // steps between task evaluations; 0: only after the last step
    int64_t task_eval_limit = 0;     // examples per task; 0: all
    // Each evaluation also reports the fraction of the last step's gradient elements that are
    // exactly zero (`mixgpt study`: in fp16 without loss scaling, mostly underflow).
    bool gradient_zero_stats = false;

    // data parallelism: one process per rank, started by mpirun or srun (train/README.md)
    bool zero_optimizer = false;      // ZeRO stage 1: the optimizer state sharded over the ranks
    bool overlap_comm = true;         // gradient buckets exchanged during the backward pass
    double bucket_mb = 25;            // MiB of fp32 gradients per collective
    double collective_timeout = 600;  // seconds a rank waits in one collective before the job is
                                      // aborted (0: forever); must exceed a checkpoint's write time
};

// The run derived from the options, the dataset's vocabulary and the number of ranks.
struct TrainPlan {
    GPTConfig model;
    int accumulation_steps = 1;   // micro-steps per optimizer step
    int64_t tokens_per_step = 0;  // B * T * accumulation_steps * ranks
    int64_t total_steps = 0;
    LrSchedule schedule;
    AdamWHyper adamw;              // learning_rate and seed are set per step
    std::optional<MuonPlan> muon;  // --optimizer muon
    LossScalePolicy loss_scale;
    float z_loss = 0.f;  // the z-loss weight (GPT::set_z_loss)
};

// Validates every option (throws Error naming the option) and derives the plan; end_of_text is the
// dataset's end-of-text token (--attention-mask document).
TrainPlan plan_training(const TrainOptions& options, int vocab_size, int world_size,
                        int32_t end_of_text = -1);

// Micro-steps per optimizer step: total / (B * T * ranks). A total that is not a multiple is an
// error listing the nearest totals that work and the micro-batch sizes that divide it.
int accumulation_steps_for(int64_t total_batch_tokens, int batch_size, int seq_len, int world_size);

// `--dataset` given once or more (each "PATH" or "PATH:WEIGHT") and `--weights W1,W2,...`
// onto options.dataset and options.mixture; throws Error naming the bad part.
void set_datasets(TrainOptions& options, const std::vector<std::string>& datasets,
                  const std::string& weights);

// The options as (name, value) text pairs, recorded in checkpoints.
std::vector<std::pair<std::string, std::string>> describe_options(const TrainOptions& options);

// Muon's AdamW rates when --embedding-lr and --head-lr are not given: 30 x --lr for the embeddings
// (and a tied head), 3 x --lr for an untied head, the best of the KJV sweeps at --lr 1e-3
// (bench/results/2026-11-28-kjv-optimizer-study/: embeddings 1e-2 and 1e-1 worse, a head 1e-3 and
// 1e-2 worse).
constexpr double muon_embedding_rate_factor = 30, muon_head_rate_factor = 3;
double muon_embedding_lr(const TrainOptions& options);
double muon_head_lr(const TrainOptions& options);
// Whether the option `name` (of describe_options) may change between a run and its resumption
// without changing what is trained: the step budget, how ranks exchange gradients, the output.
bool is_run_mechanics(const std::string& name);

}  // namespace mixgpt
