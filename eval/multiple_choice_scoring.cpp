#include "eval/multiple_choice_scoring.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/memory.h"

namespace mixgpt {
namespace {

// The rows an example needs scored: one per distinct choice.
std::vector<RowRef> distinct_rows(const EncodedExample& example, int example_index) {
    std::vector<RowRef> rows;
    for (size_t c = 0; c < example.choices.size(); ++c)
        if (example.row_of_choice[c] == static_cast<int>(c))
            rows.push_back({example_index, static_cast<int>(c)});
    return rows;
}

// One forward pass's tokens: inputs then targets, each (b, t) i32, in host staging and backend memory.
class BatchStaging {
public:
    BatchStaging(Backend& backend, int batch_size, int seq_len)
        : backend_(backend),
          host_(
              backend.allocate_host_staging(2 * static_cast<size_t>(batch_size) * seq_len * sizeof(int32_t))),
          device_(backend.allocate(host_.bytes())) {}

    // Writes rows padded to length t with token 0 (never scored) and uploads them; returns the
    // (b, t) input and target views.
    std::pair<TensorView, TensorView> upload(const std::vector<ChoiceRow>& rows, int t) {
        const size_t b = rows.size(), cells = b * static_cast<size_t>(t);
        int32_t* inputs = host_.as<int32_t>();
        int32_t* targets = inputs + cells;
        for (size_t r = 0; r < b; ++r) {
            const std::vector<int32_t>& tokens = rows[r].tokens;
            const size_t length = tokens.size() - 1;  // inputs of this row
            for (size_t p = 0; p < static_cast<size_t>(t); ++p) {
                inputs[r * t + p] = p < length ? tokens[p] : 0;
                targets[r * t + p] = p < length ? tokens[p + 1] : 0;
            }
        }
        backend_.copy_to_backend(device_.data(), host_.data(), 2 * cells * sizeof(int32_t));
        const int64_t rows_count = static_cast<int64_t>(b);
        return {TensorView(device_.data(), DType::i32, {rows_count, t}),
                TensorView(device_.as<int32_t>() + cells, DType::i32, {rows_count, t})};
    }

private:
    Backend& backend_;
    Buffer host_, device_;
};

// Index of the lowest value; the lowest index among equals.
int lowest(const std::vector<double>& values) {
    int best = 0;
    for (size_t i = 1; i < values.size(); ++i)
        if (values[i] < values[static_cast<size_t>(best)]) best = static_cast<int>(i);
    return best;
}

// Fills the shared rows' choices and picks the answers, once all of an example's rows are scored.
void finish_example(const EncodedExample& example, ExampleScore& score) {
    std::vector<double> means(example.choices.size());
    for (size_t c = 0; c < example.choices.size(); ++c) {
        score.sums[c] = score.sums[static_cast<size_t>(example.row_of_choice[c])];
        score.tokens[c] = static_cast<int>(example.choices[c].size());
        means[c] = score.sums[c] / score.tokens[c];
    }
    score.choice = lowest(score.sums);
    score.choice_norm = lowest(means);
    score.scored = true;
}

// One forward pass over `batch`: each row's summed loss over its choice's tokens into `scores`.
void score_batch(GPT& model, BatchStaging& staging, const ChoiceTask& task, const RowBatch& batch,
                 std::vector<float>& host_losses, std::vector<ExampleScore>& scores) {
    std::vector<ChoiceRow> rows;
    int length = 1;  // inputs of the longest row
    for (const RowRef& ref : batch) {
        rows.push_back(choice_row(task.examples[static_cast<size_t>(ref.example)], ref.choice, task.window));
        length = std::max(length, static_cast<int>(rows.back().tokens.size()) - 1);
    }
    MIXGPT_REQUIRE(length <= model.seq_len(), "task evaluation: a row of " + std::to_string(length) +
                                                  " inputs exceeds the model's T of " +
                                                  std::to_string(model.seq_len()));
    const auto [inputs, targets] = staging.upload(rows, length);
    const TensorView losses = model.forward(inputs, targets);  // (rows, length) f32
    model.backend().copy_to_host(host_losses.data(), losses.data, losses.bytes());
    for (size_t r = 0; r < rows.size(); ++r) {
        const float* row_losses = host_losses.data() + r * static_cast<size_t>(length);
        double sum = 0;
        for (size_t p = static_cast<size_t>(rows[r].first_scored); p + 1 < rows[r].tokens.size(); ++p)
            sum += row_losses[p];
        scores[static_cast<size_t>(batch[r].example)].sums[static_cast<size_t>(batch[r].choice)] = sum;
    }
}

}  // namespace

std::vector<std::vector<RowBatch>> plan_scoring_units(const ChoiceTask& task, int rows_per_batch) {
    MIXGPT_REQUIRE(rows_per_batch >= 1, "batch-size: must be at least 1");
    const size_t capacity = static_cast<size_t>(rows_per_batch);
    std::vector<std::vector<RowBatch>> units;
    RowBatch packed;
    const auto flush = [&] {
        if (!packed.empty()) units.push_back({std::move(packed)});
        packed.clear();
    };
    for (size_t e = 0; e < task.examples.size(); ++e) {
        const std::vector<RowRef> rows = distinct_rows(task.examples[e], static_cast<int>(e));
        if (rows.size() > capacity) {
            flush();
            std::vector<RowBatch> own;
            for (size_t first = 0; first < rows.size(); first += capacity)
                own.emplace_back(
                    rows.begin() + static_cast<ptrdiff_t>(first),
                    rows.begin() + static_cast<ptrdiff_t>(std::min(rows.size(), first + capacity)));
            units.push_back(std::move(own));
            continue;
        }
        if (packed.size() + rows.size() > capacity) flush();
        packed.insert(packed.end(), rows.begin(), rows.end());
    }
    flush();
    return units;
}

std::vector<ExampleScore> score_choice_task(GPT& model, const ChoiceTask& task, int rank, int world_size,
                                            const ScoringProgress& progress) {
    MIXGPT_REQUIRE(world_size >= 1 && rank >= 0 && rank < world_size, "task evaluation: bad rank");
    const int b = model.batch_size(), t = model.seq_len();
    BatchStaging staging(model.backend(), b, t);
    std::vector<float> host_losses(static_cast<size_t>(b) * t);
    std::vector<ExampleScore> scores(task.examples.size());
    for (size_t e = 0; e < task.examples.size(); ++e) {
        scores[e].sums.assign(task.examples[e].choices.size(), 0.0);
        scores[e].tokens.assign(task.examples[e].choices.size(), 0);
    }
    const std::vector<std::vector<RowBatch>> units = plan_scoring_units(task, b);
    int64_t done = 0;
    for (size_t u = static_cast<size_t>(rank); u < units.size(); u += static_cast<size_t>(world_size)) {
        for (const RowBatch& batch : units[u]) score_batch(model, staging, task, batch, host_losses, scores);
        int last = -1;
        for (const RowBatch& batch : units[u])
            for (const RowRef& ref : batch)
                if (ref.example != last) {
                    last = ref.example;
                    finish_example(task.examples[static_cast<size_t>(last)],
                                   scores[static_cast<size_t>(last)]);
                    ++done;
                }
        if (progress) progress(done);
    }
    return scores;
}

std::array<double, TaskTotals::kFields> TaskTotals::to_array() const {
    return {static_cast<double>(examples), static_cast<double>(correct), static_cast<double>(correct_norm),
            static_cast<double>(contexts_cut), chance_sum};
}

TaskTotals TaskTotals::from_array(const std::array<double, kFields>& values) {
    TaskTotals totals;
    totals.examples = static_cast<int64_t>(values[0]);
    totals.correct = static_cast<int64_t>(values[1]);
    totals.correct_norm = static_cast<int64_t>(values[2]);
    totals.contexts_cut = static_cast<int64_t>(values[3]);
    totals.chance_sum = values[4];
    return totals;
}

double TaskTotals::acc() const { return examples > 0 ? static_cast<double>(correct) / examples : 0; }
double TaskTotals::acc_norm() const {
    return examples > 0 ? static_cast<double>(correct_norm) / examples : 0;
}
double TaskTotals::chance() const { return examples > 0 ? chance_sum / examples : 0; }

TaskTotals count_task_results(const ChoiceTask& task, const std::vector<ExampleScore>& scores) {
    TaskTotals totals;
    for (size_t e = 0; e < scores.size(); ++e) {
        if (!scores[e].scored) continue;
        const EncodedExample& example = task.examples[e];
        ++totals.examples;
        totals.correct += scores[e].choice == example.label ? 1 : 0;
        totals.correct_norm += scores[e].choice_norm == example.label ? 1 : 0;
        totals.contexts_cut += example.context_cut > 0 ? 1 : 0;
        totals.chance_sum += 1.0 / static_cast<double>(example.choices.size());
    }
    return totals;
}

Interval wilson_interval(int64_t successes, int64_t trials) {
    if (trials <= 0) return {0, 1};
    constexpr double z = 1.959963984540054;  // the 97.5th percentile of the standard normal
    const double n = static_cast<double>(trials), p = static_cast<double>(successes) / n;
    const double denominator = 1 + z * z / n;
    const double centre = (p + z * z / (2 * n)) / denominator;
    const double half = z / denominator * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n));
    return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

}  // namespace mixgpt
