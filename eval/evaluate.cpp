#include "eval/evaluate.h"

#include <algorithm>

#include "core/error.h"
#include "eval/token_batch.h"
#include "eval/windows.h"

namespace mixgpt {
namespace {

// Runs the forward pass on `windows` (B, T+1) and adds the losses of rows [0, rows), each from
// position first_scored[row] on.
void add_batch_losses(GPT& model, TokenBatch& batch, const int32_t* windows, int rows,
                      const std::vector<int>& first_scored, std::vector<float>& host_losses,
                      LossTotals& totals) {
    batch.upload(windows);
    const TensorView losses = model.forward(batch.inputs(), batch.targets());  // (B, T) f32
    model.backend().copy_to_host(host_losses.data(), losses.data, losses.bytes());
    const int t = model.seq_len();
    for (int row = 0; row < rows; ++row) {
        const float* row_losses = host_losses.data() + static_cast<size_t>(row) * t;
        for (int position = first_scored[row]; position < t; ++position) totals.nats += row_losses[position];
        totals.tokens += t - first_scored[row];
    }
}

}  // namespace

LossTotals evaluate_loader(GPT& model, DataLoader& loader, int64_t max_batches) {
    const int b = model.batch_size(), t = model.seq_len();
    TokenBatch batch(model.backend(), b, t);
    std::vector<float> host_losses(static_cast<size_t>(b) * t);
    const std::vector<int> all_scored(static_cast<size_t>(b), 0);
    LossTotals totals;
    Batch next;
    for (int64_t count = 0; (max_batches == 0 || count < max_batches) && loader.next(next); ++count) {
        if (next.rows == 0) continue;
        add_batch_losses(model, batch, next.tokens, next.rows, all_scored, host_losses, totals);
    }
    return totals;
}

LossTotals evaluate_tokens(GPT& model, const std::vector<int32_t>& tokens, int stride) {
    const int b = model.batch_size(), t = model.seq_len();
    const std::vector<EvalWindow> windows = plan_windows(static_cast<int64_t>(tokens.size()), t, stride);
    TokenBatch batch(model.backend(), b, t);
    std::vector<float> host_losses(static_cast<size_t>(b) * t);
    std::vector<int32_t> host_windows(static_cast<size_t>(b) * (t + 1));
    std::vector<int> first_scored(static_cast<size_t>(b), 0);
    LossTotals totals;
    for (size_t first = 0; first < windows.size(); first += static_cast<size_t>(b)) {
        const int rows = static_cast<int>(std::min(windows.size() - first, static_cast<size_t>(b)));
        for (int row = 0; row < b; ++row) {
            const EvalWindow& window = windows[first + static_cast<size_t>(std::min(row, rows - 1))];
            const auto begin = tokens.begin() + window.start;
            std::copy(begin, begin + t + 1, host_windows.begin() + static_cast<ptrdiff_t>(row) * (t + 1));
            first_scored[static_cast<size_t>(row)] = window.first_scored;
        }
        add_batch_losses(model, batch, host_windows.data(), rows, first_scored, host_losses, totals);
    }
    return totals;
}

}  // namespace mixgpt
