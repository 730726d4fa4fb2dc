#include "model/memory_plan.h"

#include <utility>
#include <vector>

#include "core/log.h"
#include "model/activations.h"
#include "model/parameters.h"

namespace mixgpt {

MemoryPlan plan_memory(const GPTConfig& config, int batch_size, int seq_len, Precision precision,
                       Recompute recompute, int64_t optimizer_elements) {
    const auto count = static_cast<size_t>(ParameterLayout(config).total());
    const size_t kept = optimizer_elements < 0 ? count : static_cast<size_t>(optimizer_elements);
    const DType act = activation_dtype(precision);
    MemoryPlan plan;
    plan.parameters = (act == DType::f32 ? count : kept) * sizeof(float);
    plan.gradients = count * sizeof(float);
    plan.optimizer_state = 2 * kept * sizeof(float);
    plan.working_copy = act == DType::f32 ? 0 : count * dtype_size(act);
    plan.activations = ActivationLayout(config, batch_size, seq_len, precision, recompute).total_bytes();
    return plan;
}

std::string format_memory_plan(const MemoryPlan& plan) {
    const std::vector<std::pair<const char*, size_t>> parts = {{"parameters (fp32)", plan.parameters},
                                                               {"gradients (fp32)", plan.gradients},
                                                               {"optimizer state", plan.optimizer_state},
                                                               {"working copy", plan.working_copy},
                                                               {"activations", plan.activations}};
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
