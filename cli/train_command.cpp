// `mixgpt train`: flags (or a TOML file) onto TrainOptions, then run_training or, with
// --dry-run, the memory plans.
#include <iostream>
#include <stdexcept>
#include <string>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/fp8_options.h"
#include "cli/model_options.h"
#include "cli/number_checks.h"
#include "cli/optimizer_options.h"
#include "cli/threads_option.h"
#include "cli/toml_config.h"
#include "train/memory_check.h"
#include "train/trainer.h"

namespace mixgpt::cli {
namespace {

struct TrainArguments {
    TrainOptions options;
    std::vector<std::string> datasets;
    std::string weights;
    std::string lr_schedule = "cosine";
    std::string precision = "fp32";
    std::string recompute = "none";
    OptimizerArguments optimizer;
    Fp8Arguments fp8;
};

// CLI11 2.1 turns a number too large for int64 into INT64_MAX without a word.
CLI::Validator fits_int64() {
    return CLI::Validator(
        [](std::string& input) -> std::string {
            try {
                static_cast<void>(std::stoll(input));
            } catch (const std::out_of_range&) {
                return input + " does not fit a 64-bit integer (at most 9223372036854775807)";
            } catch (const std::exception&) {
                // not a number: the conversion says so
            }
            return "";
        },
        "INT64");
}

void run(TrainArguments& arguments) {
    TrainOptions& options = arguments.options;
    set_datasets(options, arguments.datasets, arguments.weights);
    options.lr_decay = parse_lr_decay(arguments.lr_schedule);
    options.precision = parse_precision(arguments.precision);
    options.recompute = parse_recompute(arguments.recompute);
    parse_optimizer_arguments(arguments.optimizer, options);
    options.fp8 = parse_fp8_arguments(arguments.fp8, options.precision);
    if (options.dry_run) {
        print_memory_plans(options, std::cout);
        return;
    }
    const TrainResult result = run_training(options);
    if (result.rank != 0) return;
    std::cout << "steps " << result.steps_done << (result.stopped_by_signal ? " (stopped by a signal)" : "")
              << "\nlast checkpoint " << result.last_checkpoint << "\nmetrics " << result.metrics_path
              << "\n";
}

}  // namespace

void add_train_command(CLI::App& app) {
    auto arguments = std::make_shared<TrainArguments>();
    TrainOptions& o = arguments->options;
    CLI::App* command =
        app.add_subcommand("train", "train a model (GPT-2 or Llama-style) on a prepared dataset");
    add_config_option(*command);

    add_model_options(*command, o.model);

    command
        ->add_option(
            "--dataset", arguments->datasets,
            "prepared dataset (a folder or .h5 file from `mixgpt prepare`); give it several times for a "
            "mixture, each PATH or PATH:WEIGHT")
        ->group("Data");
    command
        ->add_option("--weights", arguments->weights,
                     "weights of the --dataset mixture, comma-separated (default: equal); rows are drawn in "
                     "these proportions")
        ->group("Data");
    command->add_option("--batch-size,-b", o.batch_size, "B: sequences per micro-step")
        ->capture_default_str()
        ->group("Data");
    command->add_option("--seq-len,-t", o.seq_len, "T: tokens per sequence (the model's context)")
        ->capture_default_str()
        ->group("Data");
    command
        ->add_flag("--align-documents", o.align_documents,
                   "training windows start at a document's first token (a document longer than T is cut into "
                   "windows T apart; a window's tail past a short document holds the next ones); default: windows "
                   "every T tokens of the token stream")
        ->group("Data");
    command
        ->add_option("--total-batch-tokens", o.total_batch_tokens,
                     "tokens per optimizer step (a multiple of B*T*ranks; 0: B*T*ranks)")
        ->capture_default_str()
        ->group("Data");
    command->add_option("--steps", o.steps, "optimizer steps")->check(fits_int64())->group("Data");
    command->add_option("--tokens", o.token_budget, "token budget instead of --steps")
        ->check(fits_int64())
        ->group("Data");

    command->add_option("--lr", o.learning_rate, "peak learning rate")
        ->capture_default_str()
        ->group("Schedule");
    command->add_option("--warmup-steps", o.warmup_steps, "linear warm-up steps")
        ->capture_default_str()
        ->group("Schedule");
    command
        ->add_option("--lr-schedule", arguments->lr_schedule,
                     "decay after warm-up: cosine, linear, constant, wsd")
        ->capture_default_str()
        ->group("Schedule");
    command->add_option("--final-lr-fraction", o.final_lr_fraction, "final learning rate / peak")
        ->capture_default_str()
        ->group("Schedule");
    command->add_option("--decay-fraction", o.decay_fraction, "wsd: fraction of the steps spent decaying")
        ->capture_default_str()
        ->group("Schedule");

    command->add_option("--beta1", o.beta1, "AdamW beta1")->capture_default_str()->group("Optimizer");
    command->add_option("--beta2", o.beta2, "AdamW beta2")->capture_default_str()->group("Optimizer");
    command->add_option("--epsilon", o.epsilon, "AdamW epsilon")->capture_default_str()->group("Optimizer");
    command->add_option("--weight-decay", o.weight_decay, "AdamW weight decay (matrices only)")
        ->capture_default_str()
        ->group("Optimizer");
    command->add_option("--grad-clip", o.grad_clip, "clip the global gradient norm to this (<= 0: off)")
        ->capture_default_str()
        ->group("Optimizer");
    command
        ->add_option(
            "--z-loss", o.z_loss,
            "add W*logsumexp(logits)^2 per token to the objective (PaLM's z-loss; 1e-4 is usual); the "
            "logged loss leaves it out, metrics.jsonl records it as z_loss (default: 0, off)")
        ->check(non_negative())
        ->group("Optimizer");
    command
        ->add_flag(
            "--stochastic-rounding", o.stochastic_rounding,
            "round the bf16 working copy stochastically (AdamW's parameters and Muon's matrices alike)")
        ->group("Optimizer");

    add_optimizer_options(*command, arguments->optimizer, o);

    command->add_option("--precision", arguments->precision, "fp32, tf32, bf16, fp16 or fp8")
        ->capture_default_str()
        ->group("Precision");
    add_fp8_options(*command, arguments->fp8);
    command
        ->add_option("--recompute", arguments->recompute, "activation recomputation: none, selective, full")
        ->capture_default_str()
        ->group("Precision");
    command
        ->add_option("--loss-scale", o.loss_scale,
                     "auto (dynamic for fp16, else none), dynamic, static:<value> or none")
        ->capture_default_str()
        ->group("Precision");
    command
        ->add_option("--loss-scale-growth-interval", o.loss_scale_growth_interval,
                     "dynamic scaling: clean steps before the scale doubles")
        ->capture_default_str()
        ->group("Precision");
    command
        ->add_option("--max-bad-steps", o.max_bad_steps,
                     "consecutive non-finite steps after which the run stops")
        ->capture_default_str()
        ->group("Precision");

    CLI::Option* skip_spikes =
        command
            ->add_option("--skip-spikes", o.skip_spikes,
                         "Z: hold back the update of a step whose loss or gradient norm lies more than Z "
                         "standard deviations above the mean of the last --spike-window applied steps "
                         "(judged once the window is full; default: off)")
            ->check(positive())
            ->group("Loss-spike guard");
    command
        ->add_option("--spike-window", o.spike_window,
                     "applied steps the mean and standard deviation are taken over (the warm-up: no step is "
                     "judged before the window is full)")
        ->capture_default_str()
        ->check(at_least(2))
        ->needs(skip_spikes)
        ->group("Loss-spike guard");
    command
        ->add_option("--max-spike-skips", o.max_spike_skips,
                     "held steps in a row that stop the run (with a checkpoint, exit status 1)")
        ->capture_default_str()
        ->check(at_least(1))
        ->needs(skip_spikes)
        ->group("Loss-spike guard");

    command
        ->add_option("--telemetry-interval", o.telemetry_interval,
                     "N: every N-th step, per tensor and per block where the numbers sit (gradient and update "
                     "norms, gradient underflow in the working precision and a histogram of the gradients' "
                     "exponents, activation maxima and RMS, attention and output logit maxima, fp16's "
                     "loss-scale headroom, fp8's amax, scale and saturation per FP8 tensor), written to "
                     "metrics.jsonl as a telemetry record (train/telemetry.h; default 0: off)")
        ->check(CLI::NonNegativeNumber)
        ->group("Run");
    command->add_option("--seed", o.seed, "seed of the initialization and the data order")
        ->capture_default_str()
        ->group("Run");
    command->add_option("--data-seed", o.data_seed, "seed of the data order alone (default: --seed)")
        ->group("Run");
    add_device_option(*command, o.device)->group("Run");
    command->add_option("--device-index", o.device_index, "CUDA device ordinal")
        ->capture_default_str()
        ->group("Run");
    add_threads_option(*command, o.threads, "CPU threads (0: OpenMP's default)")->group("Run");
    command
        ->add_option("--peak-tflops", o.peak_tflops,
                     "peak TFLOP/s of each device for the MFU in metrics.jsonl (default: looked up by device "
                     "name; unknown for CPUs)")
        ->check(positive())
        ->group("Run");
    command->add_option("--eval-interval", o.eval_interval, "steps between evaluations (0: only at the end)")
        ->capture_default_str()
        ->group("Run");
    command->add_option("--eval-batches", o.eval_batches, "validation batches per evaluation (0: all)")
        ->capture_default_str()
        ->group("Run");
    CLI::Option* task_eval =
        command
            ->add_option(
                "--task-eval", o.task_evals,
                "multiple-choice task to evaluate, FORMAT:FILE with FORMAT hellaswag or mc (repeatable): "
                "acc and acc_norm into metrics.jsonl and, after the last step, eval.json")
            ->group("Run");
    command
        ->add_option("--task-eval-interval", o.task_eval_interval,
                     "steps between task evaluations (0: only at the end)")
        ->check(non_negative())
        ->needs(task_eval)
        ->group("Run");
    command->add_option("--task-eval-limit", o.task_eval_limit, "only the first N examples of each task (default: all)")
        ->check(positive())
        ->needs(task_eval)
        ->group("Run");
    command
        ->add_option("--checkpoint-interval", o.checkpoint_interval,
                     "steps between checkpoints (0: only at the end)")
        ->capture_default_str()
        ->group("Run");
    command->add_option("--keep-checkpoints", o.keep_checkpoints, "keep the newest K checkpoints")
        ->capture_default_str()
        ->group("Run");
    command->add_option("--output-dir,-o", o.output_dir, "run directory: metrics.jsonl, checkpoints/")
        ->capture_default_str()
        ->group("Run");
    command
        ->add_option("--tensorboard", o.tensorboard_dir,
                     "also write the metrics as TensorBoard scalars into a new event file in this folder "
                     "(each start or resume adds one; view with `tensorboard --logdir` on it or a folder above)")
        ->type_name("DIR")
        ->check(CLI::Validator(
            [](std::string& folder) { return folder.empty() ? std::string("must not be empty") : std::string(); },
            ""))
        ->group("Run");
    command
        ->add_option("--resume", o.resume,
                     "continue from the newest valid checkpoint in the output directory (--resume; an error "
                     "when there is none), from it or from scratch when there is none (--resume if-present), "
                     "or from a file (--resume FILE)")
        ->expected(0, 1)
        ->default_str("auto")
        ->group("Run");
    command
        ->add_flag(
            "--overwrite", o.overwrite,
            "the output directory holds another run: move its files into replaced-<time>/ inside it and "
            "start a new run (without it such a directory is refused)")
        ->group("Run");
    command
        ->add_flag("--verify-data", o.verify_data,
                   "check every shard's SHA-256 against index.json before the first step (without it, "
                   "each shard is checked when its tokens are first read)")
        ->group("Run");
    command
        ->add_flag("--allow-nonfinite", o.allow_nonfinite,
                   "resume even from weights, AdamW moments or a loss scale that are NaN or Inf")
        ->group("Run");
    command->add_flag("--dry-run", o.dry_run, "print the memory plan for each recompute policy and exit")
        ->group("Run");
    command->add_flag("--zero", o.zero_optimizer,
                      "ZeRO-1: shard the optimizer state over the ranks (--optimizer muon: whole Muon matrices "
                      "per rank, round-robin within each shape)")
        ->group("Data parallel (under mpirun or srun)");
    command
        ->add_flag("--overlap-comm,!--no-overlap-comm", o.overlap_comm,
                   "exchange each gradient bucket during the backward pass as soon as it is final "
                   "(default), or all after it")
        ->group("Data parallel (under mpirun or srun)");
    command->add_option("--bucket-mb", o.bucket_mb, "MiB of fp32 gradients per collective")
        ->capture_default_str()
        ->group("Data parallel (under mpirun or srun)");
    command
        ->add_option("--collective-timeout", o.collective_timeout,
                     "seconds a rank waits in one collective before the job is aborted (0: forever)")
        ->capture_default_str()
        ->group("Data parallel (under mpirun or srun)");

    command->callback([arguments] { run(*arguments); });
}

}  // namespace mixgpt::cli
