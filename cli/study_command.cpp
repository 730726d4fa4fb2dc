// `mixgpt study`: flags (or a TOML file) onto StudyOptions; runs what is missing and writes the
// report (study/precision_study.h).
#include <iostream>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/model_options.h"
#include "cli/threads_option.h"
#include "cli/toml_config.h"
#include "core/error.h"
#include "study/precision_study.h"

namespace mixgpt::cli {
namespace {

struct StudyArguments {
    StudyOptions options;
    std::string precisions = "fp32,tf32,bf16,fp16,fp16-noscale,bf16-sr,fp8";
    std::string optimizers;  // empty: a precision study
    std::string lr_schedule = "cosine";
    std::string recompute = "none";
};

}  // namespace

void add_study_command(CLI::App& app) {
    auto arguments = std::make_shared<StudyArguments>();
    StudyOptions& study = arguments->options;
    TrainOptions& o = study.train;
    o.eval_interval = 100;
    CLI::App* command = app.add_subcommand(
        "study",
        "train the same model once per precision, or per optimizer (--optimizers), with the same seed, data "
        "and token budget, and report accuracy, speed, memory and loss scaling side by side");
    add_config_option(*command);
    command
        ->add_option("--precisions", arguments->precisions,
                     "runs, comma-separated: fp32, tf32, bf16, fp16 (dynamic loss scaling), fp16-noscale, "
                     "bf16-sr (stochastic rounding), fp8 (delayed scaling), fp8-current, fp8-head")
        ->capture_default_str();
    CLI::Option* optimizers = command->add_option("--optimizers", arguments->optimizers,
                                                  "compare optimizers instead, comma-separated: adamw (at "
                                                  "--lr), muon (bf16 Newton-Schulz, at --muon-lr), "
                                                  "muon-fp32; the first is the one the others must reach; "
                                                  "all at the one run of --precisions (default fp32)");
    command->add_option("--muon-lr", o.muon_lr, "--optimizers: peak learning rate of the Muon matrices")
        ->capture_default_str();
    command->add_option("--embedding-lr", o.embedding_lr,
                        "--optimizers: Muon runs' embedding rate (default 30 x --lr)");
    command->add_option("--head-lr", o.head_lr,
                        "--optimizers: Muon runs' untied output head rate (default 3 x --lr)");
    command
        ->add_option("--output-dir,-o", study.output_dir, "study directory: one run directory per precision")
        ->capture_default_str();
    command->add_option("--bench-steps", study.bench_steps, "timed steps of `mixgpt bench` per precision")
        ->capture_default_str();
    command->add_option("--dataset", o.dataset, "prepared dataset (the folder, or a .h5 file, from `mixgpt prepare`)")->required();
    add_model_options(*command, o.model);
    command->add_option("--batch-size,-b", o.batch_size, "B: sequences per micro-step")
        ->capture_default_str();
    command->add_option("--seq-len,-t", o.seq_len, "T: tokens per sequence")->capture_default_str();
    command->add_option("--total-batch-tokens", o.total_batch_tokens, "tokens per optimizer step (0: B*T)");
    command->add_option("--steps", o.steps, "optimizer steps per run");
    command->add_option("--tokens", o.token_budget, "token budget per run instead of --steps");
    command->add_option("--lr", o.learning_rate, "peak learning rate")->capture_default_str();
    command->add_option("--warmup-steps", o.warmup_steps, "linear warm-up steps")->capture_default_str();
    command->add_option("--lr-schedule", arguments->lr_schedule, "cosine, linear, constant, wsd")
        ->capture_default_str();
    command->add_option("--recompute", arguments->recompute, "none, selective, full")->capture_default_str();
    command->add_option("--eval-interval", o.eval_interval, "steps between evaluations (and checkpoints)")
        ->capture_default_str();
    command
        ->add_option("--telemetry-interval", o.telemetry_interval,
                     "steps between the runs' telemetry records (train --telemetry-interval; default: "
                     "--eval-interval), which the report's departures from fp32 compare")
        ->check(CLI::NonNegativeNumber);
    command->add_option("--eval-batches", o.eval_batches, "validation batches per evaluation (0: all)")
        ->capture_default_str();
    command->add_option("--seed", o.seed, "seed of the initialization and the data order")
        ->capture_default_str();
    command
        ->add_option("--seeds", study.seeds,
                     "runs per precision, initialized from --seed, --seed + 1, ... with --seed's data order; "
                     "the report gives each precision's mean and spread")
        ->capture_default_str();
    add_device_option(*command, o.device);
    command->add_option("--device-index", o.device_index, "CUDA device ordinal");
    add_threads_option(*command, o.threads, "CPU threads (0: OpenMP's default)");
    command->callback([arguments, command, optimizers] {
        StudyOptions& options = arguments->options;
        if (optimizers->count() > 0) {
            const std::vector<StudyVariant> precision = parse_study_variants(
                command->get_option("--precisions")->count() > 0 ? arguments->precisions : "fp32");
            if (precision.size() != 1)
                throw Error("optimizers: compares optimizers at one precision; --precisions names " +
                            std::to_string(precision.size()));
            options.variants = parse_optimizer_variants(arguments->optimizers, precision.front());
            options.optimizers = true;
        } else {
            options.variants = parse_study_variants(arguments->precisions);
        }
        options.train.lr_decay = parse_lr_decay(arguments->lr_schedule);
        options.train.recompute = parse_recompute(arguments->recompute);
        if (!run_study(options)) std::cout << "study stopped; the same command continues it\n";
    });
}

}  // namespace mixgpt::cli
