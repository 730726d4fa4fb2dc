// Global gradient norm, AdamW on the fp32 masters, and the loss-scale update.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/stochastic_rounding.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

constexpr int64_t kNormChunk = 65536;    // fixed partition of the norm's sum, whatever the thread count
constexpr int64_t kNormLanes = 8;        // running sums within one chunk of the norm
constexpr int64_t kUpdateChunk = 16384;  // elements of one AdamW work item

}  // namespace

void CpuBackend::grad_norm_squared(StepStatus* status, TensorView grads) {
    require(status != nullptr, "grad_norm_squared", "status is null");
    require_rank(grads, DType::f32, 1, "grad_norm_squared", "grads");
    const float* g = grads.as<const float>();
    const int64_t n = grads.numel();
    const int64_t chunks = (n + kNormChunk - 1) / kNormChunk;
    std::vector<double> partial(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        // kNormLanes running sums, element i into lane i % kNormLanes: independent chains that
        // vectorize, where one running sum waits on each addition.
        double lanes[kNormLanes] = {};
        const int64_t begin = chunk * kNormChunk, end = std::min(n, begin + kNormChunk);
        int64_t i = begin;
        for (; i + kNormLanes <= end; i += kNormLanes)
            for (int64_t lane = 0; lane < kNormLanes; ++lane)
                lanes[lane] += static_cast<double>(g[i + lane]) * g[i + lane];
        for (; i < end; ++i) lanes[i % kNormLanes] += static_cast<double>(g[i]) * g[i];
        double sum = 0.0;
        for (double lane : lanes) sum += lane;
        partial[static_cast<size_t>(chunk)] = sum;
    }
    double total = 0.0;
    for (double sum : partial) total += sum;
    status->grad_norm_squared = static_cast<float>(total);
    status->skip = std::isfinite(status->grad_norm_squared) ? 0 : 1;
}

void CpuBackend::adamw_step(TensorView params, TensorView grads, TensorView m, TensorView v,
                            TensorView working, int64_t decay_count, const AdamWHyper& hyper,
                            StepStatus* status) {
    const char* op = "adamw_step";
    require(status != nullptr, op, "status is null");
    require_rank(params, DType::f32, 1, op, "params");
    const int64_t n = params.numel();
    require_tensor(grads, DType::f32, {n}, op, "grads");
    require_tensor(m, DType::f32, {n}, op, "m");
    require_tensor(v, DType::f32, {n}, op, "v");
    const bool separate_working = working.valid() && working.data != params.data;
    if (separate_working) require_tensor(working, act(), {n}, op, "working");
    require(separate_working || act() == DType::f32, op, "a 16-bit run needs a separate working copy");
    require(decay_count >= 0 && decay_count <= n, op, "decay_count is outside [0, n]");
    if (status->skip != 0) return;

    const int t = status->optimizer_steps + 1;
    if (hyper.count_step) status->optimizer_steps = t;
    const float loss_scale = status->loss_scale;
    const float norm = std::sqrt(status->grad_norm_squared) / loss_scale;
    float gradient_factor = 1.f / loss_scale;
    if (hyper.max_grad_norm > 0.f && norm > hyper.max_grad_norm)
        gradient_factor *= hyper.max_grad_norm / norm;
    const float beta1 = hyper.beta1, beta2 = hyper.beta2;
    const auto correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), t));
    const auto correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), t));
    float* p = params.as<float>();
    const float* g = grads.as<const float>();
    float* m1 = m.as<float>();
    float* m2 = v.as<float>();
    const DType working_dtype = act();
    const bool stochastic = separate_working && hyper.stochastic_rounding && working_dtype == DType::bf16;
    const size_t working_element = dtype_size(working_dtype);
    const int64_t chunks = (n + kUpdateChunk - 1) / kUpdateChunk;
    // Whole chunks per thread: the update loop has no branch and vectorizes; the chunk's working
    // copy is then written by one (vectorized) conversion instead of a call per element.
#pragma omp parallel for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const int64_t begin = chunk * kUpdateChunk, end = std::min(n, begin + kUpdateChunk);
        for (int64_t i = begin; i < end; ++i) {
            const float gi = g[i] * gradient_factor;
            m1[i] = beta1 * m1[i] + (1.f - beta1) * gi;
            m2[i] = beta2 * m2[i] + (1.f - beta2) * gi * gi;
            const float update = (m1[i] / correction1) / (std::sqrt(m2[i] / correction2) + hyper.epsilon);
            const float decay = i < decay_count ? hyper.weight_decay : 0.f;
            p[i] -= hyper.learning_rate * (update + decay * p[i]);
        }
        if (!separate_working) continue;
        if (stochastic) {
            for (int64_t i = begin; i < end; ++i)
                working.as<uint16_t>()[i] = stochastic_bf16_bits(p[i], hyper.seed, i);
        } else {
            convert_from_float(p + begin, working.as<char>() + static_cast<size_t>(begin) * working_element,
                               working_dtype, static_cast<size_t>(end - begin));
        }
    }
}

void CpuBackend::decide_skip(StepStatus* status) {
    require(status != nullptr, "decide_skip", "status is null");
    status->skip = std::isfinite(status->grad_norm_squared) ? 0 : 1;
}

void CpuBackend::update_loss_scale(StepStatus* status, const LossScaleConfig& config) {
    require(status != nullptr, "update_loss_scale", "status is null");
    if (status->skip != 0) {
        status->skipped_steps += 1;
        status->clean_steps = 0;
        if (config.dynamic)
            status->loss_scale = std::max(status->loss_scale * config.backoff_factor, config.min_scale);
        return;
    }
    status->clean_steps += 1;
    if (config.dynamic && status->clean_steps >= config.growth_interval) {
        status->loss_scale = std::min(status->loss_scale * config.growth_factor, config.max_scale);
        status->clean_steps = 0;
    }
}

}  // namespace mixgpt::cpu
