// Values that are not finite (NaN, +-Inf) in weights and optimizer state are refused where they
// enter: resume (train), eval, sample and export refuse such a checkpoint in one line naming the
// first tensor holding them and the count, unless the user passes --allow-nonfinite. (A model
// with NaN weights evaluates to "nan" and samples garbage with exit status 0; a resumed run with
// NaN moments diverges at once.) interop/import.cpp checks the safetensors tensors the same way.
#pragma once

#include <cstdint>
#include <string>

#include "model/checkpoint.h"

namespace mixgpt {

// Elements of `values` (n) that are NaN or infinite.
int64_t count_nonfinite(const float* values, int64_t n);

// The option that accepts non-finite values anyway, named in the messages.
inline constexpr const char* kAllowNonfiniteOption = "--allow-nonfinite";

// Throws Error "<path>: tensor '<name>' of the <part> has N non-finite values (NaN or Inf), M in all;
// refusing the checkpoint (--allow-nonfinite accepts it)" for the first part that holds any: the
// FP32 weights, the 16-bit working copy, the AdamW moments (when read), then the loss scale (which
// must also be positive).
void require_finite_checkpoint(const Checkpoint& checkpoint, const std::string& path);

}  // namespace mixgpt
