#include "eval/evaluate.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "model/token_batch.h"
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

LossTotals evaluate_loader(GPT& model, DataLoader& loader, int64_t max_batches, Progress* progress) {
    const int b = model.batch_size(), t = model.seq_len();
    TokenBatch batch(model.backend(), b, t);
    std::vector<float> host_losses(static_cast<size_t>(b) * t);
    const std::vector<int> all_scored(static_cast<size_t>(b), 0);
    LossTotals totals;
    Batch next;
    int64_t count = 0;
    for (; (max_batches == 0 || count < max_batches) && loader.next(next); ++count) {
        if (progress != nullptr) progress->update(static_cast<double>(count));
        if (next.rows == 0) continue;
        add_batch_losses(model, batch, next.tokens, next.rows, all_scored, host_losses, totals);
    }
    if (progress != nullptr)
        progress->finish(format("%lld tokens scored", static_cast<long long>(totals.tokens)));
    return totals;
}

int64_t stride_window_count(const std::vector<TokenStream>& streams, int seq_len, int stride) {
    int64_t windows = 0;
    for (const TokenStream& stream : streams) windows += stride_window_count(stream.tokens, seq_len, stride);
    return windows;
}

LossTotals evaluate_streams(GPT& model, const std::vector<TokenStream>& streams, int stride,
                            Progress* progress) {
    const int b = model.batch_size(), t = model.seq_len();
    MIXGPT_REQUIRE(stride >= 1 && stride <= t,
                   "stride: must lie in [1, seq-len = " + std::to_string(t) + "]");
    int64_t tokens = 0;
    for (const TokenStream& stream : streams) tokens += stream.tokens;
    const int64_t windows = stride_window_count(streams, t, stride);
    MIXGPT_REQUIRE(windows > 0, "the text has " + std::to_string(tokens) +
                                    " tokens, fewer than seq-len + 1 = " + std::to_string(t + 1) +
                                    " needed for one window");
    TokenBatch batch(model.backend(), b, t);
    std::vector<float> host_losses(static_cast<size_t>(b) * t);
    std::vector<int32_t> host_windows(static_cast<size_t>(b) * (t + 1));  // (B, T+1)
    std::vector<int> first_scored(static_cast<size_t>(b), 0);
    LossTotals totals;
    int rows = 0;
    int64_t done = 0;
    const auto flush = [&] {
        for (int row = rows; row < b; ++row) {  // repeat the last real row
            std::copy_n(host_windows.begin() + static_cast<ptrdiff_t>(rows - 1) * (t + 1), t + 1,
                        host_windows.begin() + static_cast<ptrdiff_t>(row) * (t + 1));
            first_scored[static_cast<size_t>(row)] = first_scored[static_cast<size_t>(rows - 1)];
        }
        add_batch_losses(model, batch, host_windows.data(), rows, first_scored, host_losses, totals);
        done += rows;
        rows = 0;
        if (progress != nullptr) progress->update(static_cast<double>(done));
    };
    for (const TokenStream& stream : streams) {
        for (int64_t j = 0; j < stride_window_count(stream.tokens, t, stride); ++j) {
            const EvalWindow window = stride_window(j, t, stride);
            stream.read(window.start, t + 1, host_windows.data() + static_cast<ptrdiff_t>(rows) * (t + 1));
            first_scored[static_cast<size_t>(rows)] = window.first_scored;
            if (++rows == b) flush();
        }
    }
    if (rows > 0) flush();
    if (progress != nullptr)
        progress->finish(format("%lld tokens scored", static_cast<long long>(totals.tokens)));
    return totals;
}

LossTotals evaluate_tokens(GPT& model, const std::vector<int32_t>& tokens, int stride) {
    const TokenStream stream{static_cast<int64_t>(tokens.size()),
                             [&tokens](int64_t offset, int64_t count, int32_t* out) {
                                 std::copy_n(tokens.begin() + offset, count, out);
                             }};
    return evaluate_streams(model, {stream}, stride);
}

}  // namespace mixgpt
