// The optimizer step on the device: global gradient norm with Inf/NaN detection,
// fused AdamW over the whole parameter arena, and the loss scaler's update.
// Each reads and writes StepStatus in device memory, so a step never waits on the
// host to decide whether to skip. Semantics: kernels/ops.h and tests/reference_f64.h.
#include <algorithm>
#include <type_traits>

#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/op_checks.h"
#include "kernels/cuda/stochastic_rounding.cuh"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kNormBlocks = 1024;  // fixed, so the reduction order depends on n only
constexpr int kVector = 4;         // fp32 elements per access when aligned

// The sum of a double over the block, valid in thread 0; fixed order.
__device__ double block_sum(double value) {
    __shared__ double per_warp_array[kThreads / kWarpSize];
    const SharedPointer<double> per_warp = shared_pointer(per_warp_array);
    const int warp = threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    value = warp_sum(value);
    if (lane == 0) per_warp[warp] = value;
    __syncthreads();
    value = 0.0;
    if (warp == 0) {
        if (lane < static_cast<int>(blockDim.x) / kWarpSize) value = per_warp[lane];
        value = warp_sum(value);
    }
    return value;
}

// partials (gridDim.x): each block's sum of squares of its grid-strided share of grads (n).
template <int N>
__global__ void squares_partials_kernel(double* partials, const float* grads, int64_t n) {
    declare_launch_limits<kThreads>();
    double sum = 0.0;
    const int64_t stride = int64_t{gridDim.x} * blockDim.x * N;
    for (int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) * N; i < n; i += stride) {
        float g[N];
        load_floats<N>(g, grads + i);
#pragma unroll
        for (int k = 0; k < N; ++k) sum += static_cast<double>(g[k]) * g[k];
    }
    sum = block_sum(sum);
    if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// One block: status->grad_norm_squared = the sum of the partials; skip when it is not finite.
__global__ void finish_norm_kernel(StepStatus* status, const double* partials, int count) {
    declare_launch_limits<kThreads>();
    double sum = 0.0;
    for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
    sum = block_sum(sum);
    if (threadIdx.x == 0) {
        const float total = static_cast<float>(sum);
        status->grad_norm_squared = total;
        status->skip = isfinite(total) ? 0 : 1;
    }
}

template <typename W>
__device__ __forceinline__ W working_value(float value, const AdamWHyper& hyper, int64_t index) {
    if constexpr (std::is_same_v<W, __nv_bfloat16>)
        if (hyper.stochastic_rounding) return stochastic_bf16(value, hyper.seed, index);
    return from_float<W>(value);
}

// AdamW on params, m, v (n) f32 from grads (n) f32, unless status->skip; working (n) W
// receives the new params (null: none). N: elements per access.
template <typename W, int N>
__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, W* working, int64_t n,
                             int64_t decay_count, AdamWHyper hyper, const StepStatus* status) {
    declare_launch_limits<kThreads>();
    if (status->skip != 0) return;
    const int step = status->optimizer_steps + 1;
    const float loss_scale = status->loss_scale;
    const float norm = sqrtf(status->grad_norm_squared) / loss_scale;
    float gradient_factor = 1.f / loss_scale;
    if (hyper.max_grad_norm > 0.f && norm > hyper.max_grad_norm)
        gradient_factor *= hyper.max_grad_norm / norm;
    // In double: 1 - beta^t cancels badly in float when beta is close to 1 (0.999^t).
    const auto correction1 = static_cast<float>(1.0 - pow(static_cast<double>(hyper.beta1), step));
    const auto correction2 = static_cast<float>(1.0 - pow(static_cast<double>(hyper.beta2), step));

    const int64_t stride = int64_t{gridDim.x} * blockDim.x * N;
    for (int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) * N; i < n; i += stride) {
        float p[N], g[N], m1[N], m2[N];
        load_floats<N>(p, params + i);
        load_floats<N>(g, grads + i);
        load_floats<N>(m1, m + i);
        load_floats<N>(m2, v + i);
#pragma unroll
        for (int k = 0; k < N; ++k) {
            const float gradient = g[k] * gradient_factor;
            m1[k] = hyper.beta1 * m1[k] + (1.f - hyper.beta1) * gradient;
            m2[k] = hyper.beta2 * m2[k] + (1.f - hyper.beta2) * gradient * gradient;
            const float update = (m1[k] / correction1) / (sqrtf(m2[k] / correction2) + hyper.epsilon);
            const float decay = i + k < decay_count ? hyper.weight_decay : 0.f;
            p[k] -= hyper.learning_rate * (update + decay * p[k]);
        }
        store_floats<N>(params + i, p);
        store_floats<N>(m + i, m1);
        store_floats<N>(v + i, m2);
        if (working != nullptr) {
            Pack<W, N> pack;
#pragma unroll
            for (int k = 0; k < N; ++k) pack.values[k] = working_value<W>(p[k], hyper, i + k);
            *reinterpret_cast<Pack<W, N>*>(working + i) = pack;
        }
    }
}

// After adamw_kernel: the update it applied counts (AdamW's t).
__global__ void count_step_kernel(StepStatus* status) {
    declare_launch_limits<1>();
    if (status->skip == 0) status->optimizer_steps += 1;
}

__global__ void decide_skip_kernel(StepStatus* status) {
    declare_launch_limits<1>();
    status->skip = isfinite(status->grad_norm_squared) ? 0 : 1;
}

__global__ void update_loss_scale_kernel(StepStatus* status, LossScaleConfig config) {
    declare_launch_limits<1>();
    if (status->skip != 0) {
        status->skipped_steps += 1;
        status->clean_steps = 0;
        if (config.dynamic)
            status->loss_scale = fmaxf(status->loss_scale * config.backoff_factor, config.min_scale);
        return;
    }
    status->clean_steps += 1;
    if (config.dynamic && status->clean_steps >= config.growth_interval) {
        status->loss_scale = fminf(status->loss_scale * config.growth_factor, config.max_scale);
        status->clean_steps = 0;
    }
}

void launch_grad_norm(cudaStream_t stream, StepStatus* status, double* partials, const float* grads,
                      int64_t n, int blocks) {
    if (n % kVector == 0 && is_aligned(grads, 16))
        launch_kernel(squares_partials_kernel<kVector>, blocks, kThreads, 0, stream, partials, grads, n);
    else
        launch_kernel(squares_partials_kernel<1>, blocks, kThreads, 0, stream, partials, grads, n);
    launch_kernel(finish_norm_kernel, 1, kThreads, 0, stream, status, partials, blocks);
}

template <typename W>
void launch_adamw(cudaStream_t stream, int max_blocks, float* params, const float* grads, float* m, float* v,
                  W* working, int64_t n, int64_t decay_count, const AdamWHyper& hyper, StepStatus* status) {
    const bool vector = n % kVector == 0 && all_aligned_16({params, grads, m, v}) &&
                        (working == nullptr || is_aligned(working, kVector * sizeof(W)));
    const int per_thread = vector ? kVector : 1;
    const auto blocks =
        static_cast<unsigned>(std::clamp<int64_t>(blocks_for(n / per_thread, kThreads), 1, max_blocks));
    if (vector)
        launch_kernel(adamw_kernel<W, kVector>, blocks, kThreads, 0, stream, params, grads, m, v, working, n,
                      decay_count, hyper, status);
    else
        launch_kernel(adamw_kernel<W, 1>, blocks, kThreads, 0, stream, params, grads, m, v, working, n,
                      decay_count, hyper, status);
    if (hyper.count_step) launch_kernel(count_step_kernel, 1, 1, 0, stream, status);
}

}  // namespace

void CudaBackend::grad_norm_squared(StepStatus* status, TensorView grads) {
    const char* op = "grad_norm_squared";
    MIXGPT_REQUIRE(status != nullptr, "cuda grad_norm_squared: status is missing (null)");
    expect_elements(op, "grads", grads, DType::f32, grads.numel());
    const int64_t n = grads.numel();
    const int blocks =
        static_cast<int>(std::clamp<int64_t>(blocks_for(n, kThreads * kVector), 1, kNormBlocks));
    auto* partials =
        static_cast<double*>(scratch_->get(ScratchSlot::grad_norm_partials, blocks * sizeof(double)));
    launch_grad_norm(stream_, status, partials, grads.as<const float>(), n, blocks);
}

void CudaBackend::adamw_step(TensorView params, TensorView grads, TensorView m, TensorView v,
                             TensorView working, int64_t decay_count, const AdamWHyper& hyper,
                             StepStatus* status) {
    const char* op = "adamw_step";
    MIXGPT_REQUIRE(status != nullptr, "cuda adamw_step: status is missing (null)");
    const int64_t n = params.numel();
    expect_elements(op, "params", params, DType::f32, n);
    expect_elements(op, "grads", grads, DType::f32, n);
    expect_elements(op, "m", m, DType::f32, n);
    expect_elements(op, "v", v, DType::f32, n);
    // A working copy that is the params themselves (fp32 runs) needs no writing.
    const bool separate_working = working.valid() && working.data != params.data;
    if (separate_working) expect_elements(op, "working", working, working.dtype, n);
    MIXGPT_REQUIRE(decay_count >= 0 && decay_count <= n,
                   format("cuda adamw_step: decay_count %lld is outside [0, %lld]",
                          static_cast<long long>(decay_count), static_cast<long long>(n)));
    const int max_blocks = 8 * multiprocessors_;
    if (!separate_working) {
        launch_adamw<float>(stream_, max_blocks, params.as<float>(), grads.as<const float>(), m.as<float>(),
                            v.as<float>(), nullptr, n, decay_count, hyper, status);
        return;
    }
    dispatch_dtype(working.dtype, [&](auto tag) {
        using W = decltype(tag);
        launch_adamw<W>(stream_, max_blocks, params.as<float>(), grads.as<const float>(), m.as<float>(),
                        v.as<float>(), working.as<W>(), n, decay_count, hyper, status);
    });
}

void CudaBackend::decide_skip(StepStatus* status) {
    MIXGPT_REQUIRE(status != nullptr, "cuda decide_skip: status is missing (null)");
    launch_kernel(decide_skip_kernel, 1, 1, 0, stream_, status);
}

void CudaBackend::update_loss_scale(StepStatus* status, const LossScaleConfig& config) {
    MIXGPT_REQUIRE(status != nullptr, "cuda update_loss_scale: status is missing (null)");
    launch_kernel(update_loss_scale_kernel, 1, 1, 0, stream_, status, config);
}

}  // namespace mixgpt::cuda
