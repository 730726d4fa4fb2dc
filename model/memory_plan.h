// Bytes a training run needs, from (config, B, T, precision, recompute), before
// anything is allocated: `mixgpt train --dry-run` prints it. The GPT allocates
// exactly parameters + gradients + working_copy + activations (tested on the CPU
// backend); the optimizer state belongs to the trainer. Not included: the KV cache
// that GPT::forward_cached allocates on first use, and backend scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/precision.h"
#include "model/config.h"

namespace mixgpt {

struct MemoryPlan {
    size_t parameters = 0;       // fp32 masters (padded vocabulary included)
    size_t gradients = 0;        // fp32, same layout
    size_t optimizer_state = 0;  // AdamW m and v, fp32
    size_t working_copy = 0;     // bf16/fp16 copy of the weights (0 for fp32/tf32: it is the masters)
    size_t activations = 0;      // model/activations.h, the backward scratch included

    size_t total() const { return parameters + gradients + optimizer_state + working_copy + activations; }
};

// optimizer_elements >= 0: the parameters whose optimizer state one rank keeps (ZeRO-1: its
// shard), and in bf16/fp16 runs whose fp32 masters it keeps; < 0: all of them.
MemoryPlan plan_memory(const GPTConfig& config, int batch_size, int seq_len, Precision precision,
                       Recompute recompute, int64_t optimizer_elements = -1);

// A table: one line per part with MiB and share of the total, then the total.
std::string format_memory_plan(const MemoryPlan& plan);

}  // namespace mixgpt
