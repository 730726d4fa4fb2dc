// Resuming with another number of ranks: the data loader's position is counted in global batches
// (ranks x B windows), so a position saved with one global batch is converted into the same
// number of windows into the same epoch, counted in this run's global batches.
#pragma once

#include "tokenizer/loader.h"

namespace mixgpt {

// `saved`: the checkpoint's loader state; `current`: the state of this run's loader (its window
// count and global batch). Returns saved itself when the global batches agree, and current when
// saved has no position (global batch 0: a checkpoint made by `mixgpt import`). Throws Error when
// the windows differ (another dataset or seq_len) or the saved position is not a whole number of
// this run's global batches; a position at or past this run's last batch of the epoch moves to
// the start of the next epoch.
LoaderState rebatch_loader_state(const LoaderState& saved, const LoaderState& current);

}  // namespace mixgpt
