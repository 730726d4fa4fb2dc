// Multiple-choice evaluation during training: `train --task-eval hellaswag:FILE` (or mc:FILE;
// repeatable) every --task-eval-interval steps and after the last, on the first --task-eval-limit
// examples. The task files are read and tokenized once, before the first step, so a bad file stops
// the run before it trains. Each rank scores its share of the work units
// (eval/multiple_choice_scoring.h) with the training model's (B, T) and window T, and the counts
// are summed over the ranks: the result is the one a single process gets with the same B.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/run_multiple_choice.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "dist/communicator.h"

namespace mixgpt {

struct TaskEvalSpec {
    TaskFormat format = TaskFormat::hellaswag;
    std::string path;
};
// "hellaswag:FILE" or "mc:FILE"; throws Error "task-eval: ..." naming what is wrong.
TaskEvalSpec parse_task_eval_spec(const std::string& text);

class TrainingTaskEvals {
public:
    // specs: "FORMAT:FILE" each; limit: examples per task (0: all). Throws Error on a bad spec or file.
    TrainingTaskEvals(const std::vector<std::string>& specs, int64_t limit, const Tokenizer& tokenizer,
                      int window);

    // Collective over the communicator's ranks; every rank gets every task's whole result.
    std::vector<TaskResult> run(GPT& model, Communicator& communicator) const;

private:
    std::vector<ChoiceTask> tasks_;
};

// eval.json of a run after its last step: {"step", "val_loss" (when finite), "tasks": [each result as
// `mixgpt eval --task --json` gives it]}, written whole or not at all.
void write_task_report(const std::string& path, int64_t step, double val_loss,
                       const std::vector<TaskResult>& results);

}  // namespace mixgpt
