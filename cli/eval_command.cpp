// `mixgpt eval`: flags (or a TOML file) onto EvalOptions, or with --task onto TaskEvalOptions;
// prints a summary or JSON.
#include <iostream>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/number_checks.h"
#include "cli/path_checks.h"
#include "cli/threads_option.h"
#include "cli/toml_config.h"
#include "eval/run_eval.h"
#include "eval/run_multiple_choice.h"

namespace mixgpt::cli {
namespace {

// --task: the checkpoint, tokenizer, batch size and device options given for the perplexity
// evaluation, with the task's own options.
void run_task(const EvalOptions& options, TaskEvalOptions task, bool json) {
    task.checkpoint = options.checkpoint;
    task.tokenizer = options.tokenizer;
    if (options.batch_size > 0) task.batch_size = options.batch_size;
    task.device = options.device;
    const TaskEvalReport report = run_task_evaluation(task);
    std::cout << (json ? task_report_json(report) + "\n" : task_report_text(report));
}

// Multiple-choice options; each needs --task, which excludes the options of the perplexity evaluation.
void add_task_options(CLI::App& command, TaskEvalOptions& task) {
    CLI::Option* task_option =
        command
            .add_option(
                "--task", task.task,
                "multiple-choice accuracy instead of perplexity: hellaswag (HellaSwag's JSON Lines) or mc "
                "({\"context\", \"choices\", \"label\"} per line)")
            ->check(CLI::IsMember({"hellaswag", "mc"}))
            ->group("Task");
    for (const char* excluded : {"--dataset", "--split", "--text", "--seq-len", "--stride", "--max-tokens"})
        task_option->excludes(command.get_option(excluded));
    command.add_option("--data", task.data, "the task file (.jsonl, .gz or .zst)")
        ->needs(task_option)
        ->group("Task");
    command.add_option("--limit", task.limit, "only the first N examples")
        ->check(positive())
        ->needs(task_option)
        ->group("Task");
    command
        .add_option(
            "--per-example", task.per_example,
            "write each example's id, label, choices made, summed losses and token counts (JSON Lines)")
        ->check(names_a_file())
        ->needs(task_option)
        ->group("Task");
    command
        .add_flag("--skip-bad-lines", task.skip_bad_lines,
                  "skip and count malformed lines instead of failing")
        ->needs(task_option)
        ->group("Task");
}

}  // namespace

void add_eval_command(CLI::App& app) {
    auto options = std::make_shared<EvalOptions>();
    auto task = std::make_shared<TaskEvalOptions>();
    auto json = std::make_shared<bool>(false);
    CLI::App* command = app.add_subcommand(
        "eval", "perplexity, loss per token and bits per byte of a checkpoint, or its accuracy on a task");
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
        ->add_option("--batch-size,-b", options->batch_size,
                     "windows per forward pass (default: training's); with --task, rows (choices) per pass "
                     "(default: 16)")
        ->check(positive());
    command->add_option("--seq-len,-t", options->seq_len, "window length T (default: the model's context)")
        ->check(positive());
    command
        ->add_option("--stride", options->stride,
                     "sliding windows: advance by this many tokens, scoring only the new ones (default: T)")
        ->check(positive());
    command->add_option("--max-tokens", options->max_tokens, "evaluate only this many leading tokens")
        ->check(positive());
    add_device_option(*command, options->device.device);
    command->add_option("--device-index", options->device.device_index, "CUDA device ordinal");
    add_threads_option(*command, options->device.threads, "CPU threads (0: OpenMP's default)");
    command->add_flag("--allow-nonfinite", options->allow_nonfinite,
                      "use weights that are NaN or Inf anyway");
    command->add_flag("--verify-data", options->verify_data,
                      "check every shard's SHA-256 against index.json before scoring (without it, each "
                      "shard is checked when its tokens are first read)");
    command->add_option("--precision", options->device.precision,
                        "fp32, tf32, bf16, fp16, fp8 (default: training's)");
    command->add_flag("--json", *json, "print one JSON object");
    add_task_options(*command, *task);
    command->callback([options, task, json] {
        if (!task->task.empty()) return run_task(*options, *task, *json);
        const EvalReport report = run_evaluation(*options);
        std::cout << (*json ? eval_report_json(report) + "\n" : eval_report_text(report));
    });
}

}  // namespace mixgpt::cli
