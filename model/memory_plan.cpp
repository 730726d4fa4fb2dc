#include "model/memory_plan.h"

#include <utility>
#include <vector>

#include "core/log.h"
#include "model/activations.h"
#include "model/parameters.h"

namespace mixgpt {

MemoryPlan plan_memory(const GPTConfig& config, int batch_size, int seq_len, Precision precision,
                       Recompute recompute, const ShardSizes* shards) {
    const auto count = static_cast<size_t>(ParameterLayout(config).total());
    const size_t kept = shards == nullptr ? count : static_cast<size_t>(shards->shard_elements);
    const size_t arena = shards == nullptr ? count : static_cast<size_t>(shards->arena_elements);
    const DType act = activation_dtype(precision);
    const size_t act_bytes = dtype_size(act);
    MemoryPlan plan;
    plan.parameters = kept * sizeof(float);
    plan.gradients = arena * sizeof(float);
    plan.optimizer_state = 2 * kept * sizeof(float);
    plan.working_copy = act == DType::f32 && shards == nullptr ? 0 : arena * act_bytes;
    plan.activations = ActivationLayout(config, batch_size, seq_len, precision, recompute).total_bytes();
    if (shards != nullptr)
        plan.shard_exchange = kept * (sizeof(float) + (act == DType::f32 ? 0 : act_bytes)) +
                              static_cast<size_t>(shards->staging_elements) * sizeof(float);
    return plan;
}

std::string format_memory_plan(const MemoryPlan& plan) {
    std::vector<std::pair<const char*, size_t>> parts = {{"parameters (fp32)", plan.parameters},
                                                         {"gradients (fp32)", plan.gradients},
                                                         {"optimizer state", plan.optimizer_state},
                                                         {"working copy", plan.working_copy},
                                                         {"activations", plan.activations}};
    if (plan.shard_exchange > 0) parts.emplace_back("shard exchange", plan.shard_exchange);
    if (plan.optimizer_iterates > 0) parts.emplace_back("Muon iterates", plan.optimizer_iterates);
    if (plan.telemetry > 0) parts.emplace_back("telemetry", plan.telemetry);
    const double total = static_cast<double>(plan.total());
    constexpr double kMiB = 1024.0 * 1024.0;
    std::string table;
    for (const auto& [name, bytes] : parts)
        table += format("  %-20s %12.1f MiB %6.1f%%\n", name, static_cast<double>(bytes) / kMiB,
                        total > 0 ? 100.0 * static_cast<double>(bytes) / total : 0.0);
    table += format("  %-20s %12.1f MiB\n", "total", total / kMiB);
    return table;
}

}  // namespace mixgpt
