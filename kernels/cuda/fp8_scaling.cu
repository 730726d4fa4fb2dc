// Device updates of the FP8 scaling state (fp8_scaling.h); the arithmetic is
// Fp8ScalingState's (kernels/fp8_scaling.cpp): IEEE division, fmaxf over the history from 0.
#include <limits>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/fp8_scaling.h"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;

// The delayed update's dynamic shared memory: the history, then a partial max per warp.
constexpr size_t delayed_update_shared_bytes(int history_length) {
    return (static_cast<size_t>(history_length) + kThreads / kWarpSize) * sizeof(float);
}

__device__ __forceinline__ float scale_from_amax(float amax, float scaled_max, float fallback) {
    if (!isfinite(amax) || !(amax > 0.f)) return fallback;
    const float scale = scaled_max / amax;
    return isinf(scale) ? std::numeric_limits<float>::max() : scale;
}

// One block per tensor: the history into shared memory and its max, the new scale from it (thread
// 0), then the history written back shifted by one slot with slot 0 zeroed.
__global__ void __launch_bounds__(kThreads)
    fp8_delayed_update_kernel(float* values, int tensors, int length, AmaxCompute compute, float scaled_max) {
    declare_launch_limits<kThreads, delayed_update_shared_bytes(kMaxAmaxHistory)>();
    const SharedPointer<float> history = dynamic_shared_memory<float>();  // (length)
    const SharedPointer<float> amaxes = history + length;                 // (warps)
    const int t = static_cast<int>(blockIdx.x);
    float* slots = values + 2 * tensors + static_cast<int64_t>(t) * length;
    float amax = 0.f;
    for (int i = static_cast<int>(threadIdx.x); i < length; i += kThreads) {
        const float slot = slots[i];
        history[i] = slot;
        amax = fmaxf(amax, slot);
    }
    amax = warp_max(amax);
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize,
              warp = static_cast<int>(threadIdx.x) / kWarpSize;
    if (lane == 0) amaxes[warp] = amax;
    __syncthreads();
    if (threadIdx.x == 0) {
        float chosen = history[0];
        if (compute == AmaxCompute::max) {
            chosen = 0.f;
            for (int w = 0; w < kThreads / kWarpSize; ++w) chosen = fmaxf(chosen, amaxes[w]);
        }
        const float scale = scale_from_amax(chosen, scaled_max, values[t]);
        values[t] = scale;
        values[tensors + t] = 1.f / scale;
    }
    for (int i = static_cast<int>(threadIdx.x); i < length; i += kThreads)
        slots[i] = i == 0 ? 0.f : static_cast<float>(history[i - 1]);
}

__global__ void fp8_current_update_kernel(float* values, int tensors, int length, int tensor,
                                          float scaled_max) {
    declare_launch_limits<1>();
    float* slot = values + 2 * tensors + static_cast<int64_t>(tensor) * length;
    const float scale = scale_from_amax(*slot, scaled_max, 1.f);
    values[tensor] = scale;
    values[tensors + tensor] = 1.f / scale;
    *slot = 0.f;
}

void check_state(const Fp8ScalingDevice& state, const char* op) {
    check_fp8_scaling_config(state.config);
    MIXGPT_REQUIRE(state.values != nullptr && state.tensors >= 0,
                   std::string("cuda ") + op + ": the state has no device values");
}

}  // namespace

void fp8_update_delayed(const Fp8ScalingDevice& state, cudaStream_t stream) {
    check_state(state, "fp8_update_delayed");
    if (state.tensors == 0) return;
    launch_kernel(fp8_delayed_update_kernel, static_cast<unsigned>(state.tensors), kThreads,
                  delayed_update_shared_bytes(state.config.history_length), stream, state.values,
                  state.tensors, state.config.history_length, state.config.amax_compute,
                  fp8_scaled_max(state.format, state.config.margin));
}

void fp8_update_current(const Fp8ScalingDevice& state, int tensor, cudaStream_t stream) {
    check_state(state, "fp8_update_current");
    MIXGPT_REQUIRE(
        tensor >= 0 && tensor < state.tensors,
        "cuda fp8_update_current: tensor " + std::to_string(tensor) + " of " + std::to_string(state.tensors));
    launch_kernel(fp8_current_update_kernel, 1, 1, 0, stream, state.values, state.tensors,
                  state.config.history_length, tensor, fp8_scaled_max(state.format, state.config.margin));
}

}  // namespace mixgpt::cuda
