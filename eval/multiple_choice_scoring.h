// Scoring a multiple-choice task on a GPT: each choice's summed loss over its own tokens, the
// choice with the lowest sum (acc) and with the lowest mean per choice token (acc_norm), lowest
// index first on ties; rows packed into forward passes, and the work split among ranks.
//
// Batches: whole examples in file order, packed while their rows (eval/multiple_choice.h: one per
// distinct choice) fit in the model's batch B; an example with more rows than B takes consecutive
// batches of its own. Each batch runs at the length of its longest row (shorter rows are padded at
// the end, which the causal model cannot see from earlier positions). Work unit u (a packed batch,
// or all the batches of one large example) belongs to rank u mod world_size: the batches do not
// depend on the number of ranks, so neither does any result.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "eval/multiple_choice.h"
#include "model/gpt.h"

namespace mixgpt {

struct RowRef {
    int example = 0;
    int choice = 0;
};
using RowBatch = std::vector<RowRef>;  // at most B rows, run in one forward pass

// The batches of each work unit.
std::vector<std::vector<RowBatch>> plan_scoring_units(const ChoiceTask& task, int rows_per_batch);

struct ExampleScore {
    bool scored = false;       // by this rank
    std::vector<double> sums;  // per choice: summed loss (nats) over the choice's tokens
    std::vector<int> tokens;   // per choice: its token count
    int choice = -1;           // lowest sum
    int choice_norm = -1;      // lowest sum / tokens
};

// Called after each work unit with the number of examples this rank has scored so far.
using ScoringProgress = std::function<void(int64_t examples_done)>;

// The scores of this rank's examples (the others stay unscored). model: batches up to its (B, T),
// T >= every row's input length (T >= task.window does).
std::vector<ExampleScore> score_choice_task(GPT& model, const ChoiceTask& task, int rank, int world_size,
                                            const ScoringProgress& progress = {});

// Counts over the scored examples; summed over ranks they are the whole task's.
struct TaskTotals {
    int64_t examples = 0, correct = 0, correct_norm = 0, contexts_cut = 0;
    double chance_sum = 0;  // sum of 1 / choices: the expected number right by guessing

    static constexpr size_t kFields = 5;
    std::array<double, kFields> to_array() const;  // exact for counts below 2^53
    static TaskTotals from_array(const std::array<double, kFields>& values);

    double acc() const;
    double acc_norm() const;
    double chance() const;
};
TaskTotals count_task_results(const ChoiceTask& task, const std::vector<ExampleScore>& scores);

// The Wilson score interval at 95% (z = 1.959964) of a proportion successes / trials.
struct Interval {
    double low = 0, high = 0;
};
Interval wilson_interval(int64_t successes, int64_t trials);

}  // namespace mixgpt
