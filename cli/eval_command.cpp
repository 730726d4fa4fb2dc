// `mixgpt eval`: flags (or a TOML file) onto EvalOptions; prints a summary or JSON.
#include <iostream>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/threads_option.h"
#include "cli/toml_config.h"
#include "eval/run_eval.h"

namespace mixgpt::cli {

void add_eval_command(CLI::App& app) {
    auto options = std::make_shared<EvalOptions>();
    auto json = std::make_shared<bool>(false);
    CLI::App* command =
        app.add_subcommand("eval", "perplexity, loss per token and bits per byte of a checkpoint");
    add_config_option(*command);
    command
        ->add_option("checkpoint,--checkpoint", options->checkpoint,
                     "checkpoint file, or a run directory (its newest valid checkpoint)")
        ->required();
    command->add_option("--dataset", options->dataset, "prepared dataset (default: the one trained on)");
    command->add_option("--split", options->split, "train or val")->capture_default_str();
    command->add_option("--text", options->text_inputs,
                        "raw text instead of a dataset: files, directories or globs (.txt, .jsonl, .gz)");
    command->add_option("--tokenizer", options->tokenizer, "tokenizer model (default: the checkpoint's)");
    // 0 is the library's "default" for these: given on the command line, a value must be >= 1.
    command
        ->add_option("--batch-size,-b", options->batch_size, "windows per forward pass (default: training's)")
        ->check(CLI::PositiveNumber);
    command->add_option("--seq-len,-t", options->seq_len, "window length T (default: the model's context)")
        ->check(CLI::PositiveNumber);
    command
        ->add_option("--stride", options->stride,
                     "sliding windows: advance by this many tokens, scoring only the new ones (default: T)")
        ->check(CLI::PositiveNumber);
    command->add_option("--max-tokens", options->max_tokens, "evaluate only this many leading tokens")
        ->check(CLI::PositiveNumber);
    add_device_option(*command, options->device.device);
    command->add_option("--device-index", options->device.device_index, "CUDA device ordinal");
    add_threads_option(*command, options->device.threads, "CPU threads (0: OpenMP's default)");
    command->add_flag("--allow-nonfinite", options->allow_nonfinite,
                      "use weights that are NaN or Inf anyway");
    command->add_option("--precision", options->device.precision,
                        "fp32, tf32, bf16, fp16 (default: training's)");
    command->add_flag("--json", *json, "print one JSON object");
    command->callback([options, json] {
        const EvalReport report = run_evaluation(*options);
        std::cout << (*json ? eval_report_json(report) + "\n" : eval_report_text(report));
    });
}

}  // namespace mixgpt::cli
