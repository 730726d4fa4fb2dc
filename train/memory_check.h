// The check of a run's memory plan (model/memory_plan.h) against the memory its backend can still
// allocate, made before the model is allocated: a run that cannot fit is refused with one line
// (the plan's figure, the available figure and what to change) instead of being killed by the
// kernel's OOM killer or ending in std::bad_alloc halfway through its allocations. And the plans
// `train --dry-run` prints.
#pragma once

#include <ostream>

#include "kernels/ops.h"
#include "model/config.h"
#include "model/memory_plan.h"
#include "train/train_options.h"

namespace mixgpt {

// Throws Error when plan_memory(config, batch_size, seq_len, precision, recompute,
// shards).total() + optimizer_iterates + telemetry (MemoryPlan's) + the backend's attention
// scratch exceeds its available memory.
void require_memory_fits(const Backend& backend, const GPTConfig& config, int batch_size, int seq_len,
                         Recompute recompute, const ShardSizes* shards, size_t optimizer_iterates = 0,
                         size_t telemetry = 0);

// --dry-run: the plan and the memory needed under each recompute policy, per rank of the job the
// launcher announces (ZeRO-1 included), Muon's iterates with --optimizer muon, and the telemetry's
// memory with --telemetry-interval (rank 0's).
void print_memory_plans(const TrainOptions& options, std::ostream& out);

}  // namespace mixgpt
