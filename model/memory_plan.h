// Bytes a training run needs, from (config, B, T, precision, recompute), before
// anything is allocated: `mixgpt train --dry-run` prints it. The GPT allocates
// exactly parameters + gradients + working_copy + activations (tested on the CPU
// backend); the optimizer state and the shard exchange belong to the trainer. Not included: the KV cache
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
    size_t shard_exchange = 0;   // ZeRO-1: the shard's mean gradients (fp32) and new working copy (16-bit),
                                 // Muon's staging
    // --optimizer muon: the Newton-Schulz iterates, a batch per matrix shape (train/muon_step.h); set
    // by the trainer, 0 from plan_memory
    size_t optimizer_iterates = 0;
    // --telemetry-interval: the fp32 masters' copy and the statistics (train/telemetry.h); set by
    // the trainer, 0 from plan_memory
    size_t telemetry = 0;

    size_t total() const {
        return parameters + gradients + optimizer_state + working_copy + activations + shard_exchange +
               optimizer_iterates + telemetry;
    }
};

// One rank's ZeRO-1 sizes (dist/shard_layout.h): its shard, whose fp32 masters and AdamW moments
// it keeps, and the arenas (gradients, working copy), both with their padding.
struct ShardSizes {
    int64_t shard_elements = 0;  // the largest rank's
    int64_t arena_elements = 0;
    int64_t staging_elements = 0;  // --optimizer muon: its collectives' f32 staging (train/muon_zero_layout.h)
};

// shards null: every rank keeps every master and moment. Under ZeRO-1 the working copy is an
// arena of its own in fp32/tf32 too (the masters kept are the shard's only).
MemoryPlan plan_memory(const GPTConfig& config, int batch_size, int seq_len, Precision precision,
                       Recompute recompute, const ShardSizes* shards = nullptr);

// A table: one line per part with MiB and share of the total, then the total.
std::string format_memory_plan(const MemoryPlan& plan);

}  // namespace mixgpt
