#include "train/memory_check.h"

#include "core/error.h"
#include "core/log.h"
#include "model/memory_plan.h"

namespace mixgpt {
namespace {

double gibibytes(size_t bytes) { return static_cast<double>(bytes) / (1ull << 30); }

}  // namespace

void require_memory_fits(const Backend& backend, const GPTConfig& config, int batch_size, int seq_len,
                         Recompute recompute, const ShardSizes* shards) {
    const Precision precision = backend.precision();
    const size_t scratch = backend.attention_scratch_bytes(seq_len);
    const auto needed_with = [&](Recompute policy) {
        return plan_memory(config, batch_size, seq_len, precision, policy, shards).total() + scratch;
    };
    const size_t needed = needed_with(recompute);
    const AvailableMemory available = backend.available_memory();
    if (needed <= available.bytes) return;
    std::string advice = "use a smaller --batch-size/-b or --seq-len/-t";
    if (recompute != Recompute::full)
        advice += format(", or --recompute full (%.2f GiB)", gibibytes(needed_with(Recompute::full)));
    throw Error(
        format("memory: this run needs %.2f GiB (B=%d, T=%d, recompute %s: the plan of `train --dry-run` "
               "plus %.2f GiB of attention scratch) but %.2f GiB is available (%s); %s",
               gibibytes(needed), batch_size, seq_len, recompute_name(recompute), gibibytes(scratch),
               gibibytes(available.bytes), available.source.c_str(), advice.c_str()));
}

}  // namespace mixgpt
