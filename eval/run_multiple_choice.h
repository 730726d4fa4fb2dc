// `mixgpt eval --task` as a library call: a checkpoint's accuracy on a multiple-choice task file
// (eval/multiple_choice.h), with a 95% interval, progress, and each example's scores on request.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>

#include "model/checkpoint_model.h"
#include "eval/multiple_choice_scoring.h"

namespace mixgpt {

struct TaskEvalOptions {
    std::string checkpoint;  // a file or a run directory
    std::string task;        // hellaswag or mc
    std::string data;        // the task file: JSON Lines, plain, .gz or .zst
    std::string tokenizer;   // "": the checkpoint's tokenizer
    int batch_size = 16;     // rows (choices) per forward pass
    int64_t limit = 0;       // the first N examples; 0: all
    bool skip_bad_lines = false;
    std::string per_example;  // "": none; else a JSON Lines file, one object per example
    DeviceOptions device;
};

// What a task evaluation found; the trainer reports the same (train/task_eval.h).
struct TaskResult {
    std::string task;  // the format's name
    std::string data;  // the task file
    int window = 0;    // the model's context: longer rows lose context tokens from the left
    TaskTotals totals;
    int64_t skipped_lines = 0;
};
// {"task", "data", "examples", "acc", "acc_interval": [low, high], "acc_norm", "acc_norm_interval",
//  "correct", "correct_norm", "chance", "contexts_cut", "window", "skipped_lines"}
nlohmann::ordered_json task_result_json(const TaskResult& result);

struct TaskEvalReport {
    std::string checkpoint;
    int64_t step = 0;
    TaskResult result;
    int batch_size = 0;
    std::string device, precision;
    double seconds = 0;  // scoring only (not reading the file or loading the model)
};

TaskEvalReport run_task_evaluation(const TaskEvalOptions& options);

std::string task_report_json(const TaskEvalReport& report);  // one JSON object
std::string task_report_text(const TaskEvalReport& report);  // a few lines for people

// One JSON object per line and example: {"id", "line", "label", "choice", "choice_norm", "sums": [...],
// "tokens": [...], "context_tokens", "context_cut"}.
void write_per_example_scores(std::ostream& out, const ChoiceTask& task,
                              const std::vector<ExampleScore>& scores);

}  // namespace mixgpt
