// The model's loss on held-out tokens: forward passes only, losses summed on the host in a fixed
// order (double precision), so the same windows give the same totals in the trainer's periodic
// evaluation and in `mixgpt eval`.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/loss_totals.h"
#include "model/gpt.h"
#include "tokenizer/loader.h"

namespace mixgpt {

// Batches of an eval-mode loader (same B and T as the model) until the split is covered, or at
// most max_batches of them (0: no limit). Only each batch's real rows count.
LossTotals evaluate_loader(GPT& model, DataLoader& loader, int64_t max_batches);

// Windows of plan_windows(tokens.size(), model T, stride) over an in-memory token stream.
LossTotals evaluate_tokens(GPT& model, const std::vector<int32_t>& tokens, int stride);

}  // namespace mixgpt
