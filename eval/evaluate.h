// The model's loss on held-out tokens: forward passes only, losses summed on the host in a fixed
// order (double precision), so the same windows give the same totals in the trainer's periodic
// evaluation and in `mixgpt eval`.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/progress.h"
#include "eval/loss_totals.h"
#include "model/gpt.h"
#include "tokenizer/loader.h"

namespace mixgpt {

// Batches of an eval-mode loader (same B and T as the model) until the split is covered, or at
// most max_batches of them (0: no limit). Only each batch's real rows count. `progress`, when
// given, counts batches.
LossTotals evaluate_loader(GPT& model, DataLoader& loader, int64_t max_batches, Progress* progress = nullptr);

// A stream of tokens read piece by piece: `read(offset, count, out)` copies tokens
// [offset, offset + count) of its `tokens` into out.
struct TokenStream {
    int64_t tokens = 0;
    std::function<void(int64_t offset, int64_t count, int32_t* out)> read;
};

// The windows of eval/windows.h (model T, `stride`) over each stream in turn, each stream's first
// window scoring all its targets; streams are read window by window, so memory does not grow with
// them. `progress`, when given, counts windows. Throws Error when no stream holds T+1 tokens.
LossTotals evaluate_streams(GPT& model, const std::vector<TokenStream>& streams, int stride,
                            Progress* progress = nullptr);

// The same over one in-memory token stream.
LossTotals evaluate_tokens(GPT& model, const std::vector<int32_t>& tokens, int stride);

// Windows of `stride` over streams of these sizes (for progress totals).
int64_t stride_window_count(const std::vector<TokenStream>& streams, int seq_len, int stride);

}  // namespace mixgpt
