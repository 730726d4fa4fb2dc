// The fused classifier: softmax, cross-entropy loss and logit gradients in one
// kernel, one block per row. Pass 1 keeps a running (max, sum of exponentials)
// per thread over the real vocabulary and combines them in a fixed tree; pass 2
// overwrites the logits with their gradients in place. No fp32 probabilities are
// stored anywhere.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 512;

// A running softmax denominator: sum of exp(x - max) over the values seen.
struct OnlineSum {
    float max = -INFINITY;
    float sum = 0.f;
};

// Adds one value: one exponential, rescaling the sum when the maximum grows.
__device__ __forceinline__ void accumulate(OnlineSum& s, float x) {
    if (x > s.max) {
        s.sum = s.sum * expf(s.max - x) + 1.f;
        s.max = x;
    } else if (x != -INFINITY) {
        s.sum += expf(x - s.max);
    }
}

__device__ __forceinline__ OnlineSum combine(OnlineSum a, OnlineSum b) {
    const float max = fmaxf(a.max, b.max);
    if (max == -INFINITY) return a;
    return {max, a.sum * expf(a.max - max) + b.sum * expf(b.max - max)};
}

__device__ __forceinline__ OnlineSum warp_combine(OnlineSum value) {
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        const OnlineSum other{__shfl_xor_sync(kFullMask, value.max, offset),
                              __shfl_xor_sync(kFullMask, value.sum, offset)};
        value = combine(value, other);
    }
    return value;
}

// The block's combined value, the same in every thread.
__device__ OnlineSum block_combine(OnlineSum value) {
    __shared__ OnlineSum per_warp_array[kThreads / kWarpSize];
    __shared__ OnlineSum result_value;
    const SharedPointer<OnlineSum> per_warp = shared_pointer(per_warp_array);
    const SharedPointer<OnlineSum> result = shared_pointer(&result_value);
    const int warp = threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    value = warp_combine(value);
    if (lane == 0) per_warp[warp] = value;
    __syncthreads();
    if (warp == 0) {
        const int warps = blockDim.x / kWarpSize;
        value = warp_combine(lane < warps ? per_warp[lane] : OnlineSum{});
        if (lane == 0) *result = value;
    }
    __syncthreads();
    return *result;
}

// Row blockIdx.x of logits (rows,Vp): losses[row] = logsumexp(logits[:V]) - logits[target];
// with kGradient the row becomes gradient_scale * loss_scale * (softmax - onehot), 0 past V.
// A target outside [0, V) makes the row's loss and gradient NaN. N: elements per access.
template <typename T, int N, bool kGradient>
__global__ void __launch_bounds__(kThreads)
    classifier_kernel(float* losses, T* logits, const int32_t* targets, int Vp, int V, float gradient_scale,
                      const StepStatus* status) {
    declare_launch_limits<kThreads>();
    const int64_t row = blockIdx.x;
    T* x = logits + row * Vp;
    const int32_t target = targets[row];
    const bool valid_target = target >= 0 && target < V;
    const float target_logit = valid_target ? to_float(x[target]) : __int_as_float(0x7fc00000);

    OnlineSum local;
    for (int j = threadIdx.x * N; j < V; j += blockDim.x * N) {
        float v[N];
        load_floats<N>(v, x + j);
#pragma unroll
        for (int i = 0; i < N; ++i)
            if (j + i < V) accumulate(local, v[i]);
    }
    const OnlineSum total = block_combine(local);
    const float lse = total.max + logf(total.sum);
    if (threadIdx.x == 0) losses[row] = lse - target_logit;
    if (!kGradient) return;

    const float factor = gradient_scale * (status != nullptr ? status->loss_scale : 1.f);
    for (int j = threadIdx.x * N; j < Vp; j += blockDim.x * N) {
        float v[N];
        load_floats<N>(v, x + j);
#pragma unroll
        for (int i = 0; i < N; ++i) {
            const int column = j + i;
            const float onehot = column == target ? 1.f : 0.f;
            v[i] = column >= V ? 0.f : factor * (expf(v[i] - lse) - onehot);
            if (!valid_target) v[i] = __int_as_float(0x7fc00000);
        }
        store_floats<N>(x + j, v);
    }
}

template <typename T, int N>
void launch_classifier_with(cudaStream_t stream, bool gradient, float* losses, T* logits,
                            const int32_t* targets, int64_t rows, int Vp, int V, float gradient_scale,
                            const StepStatus* status) {
    const auto blocks = static_cast<unsigned>(rows);
    if (gradient)
        launch_kernel(classifier_kernel<T, N, true>, blocks, kThreads, 0, stream, losses, logits, targets, Vp,
                      V, gradient_scale, status);
    else
        launch_kernel(classifier_kernel<T, N, false>, blocks, kThreads, 0, stream, losses, logits, targets,
                      Vp, V, gradient_scale, status);
}

template <typename T>
void launch_classifier(cudaStream_t stream, bool gradient, float* losses, T* logits, const int32_t* targets,
                       int64_t rows, int Vp, int V, float gradient_scale, const StepStatus* status) {
    constexpr int N = kPack16<T>;
    if (Vp % N == 0 && all_aligned_16({logits}))
        launch_classifier_with<T, N>(stream, gradient, losses, logits, targets, rows, Vp, V, gradient_scale,
                                     status);
    else
        launch_classifier_with<T, 1>(stream, gradient, losses, logits, targets, rows, Vp, V, gradient_scale,
                                     status);
}

}  // namespace

void CudaBackend::classifier(TensorView losses, TensorView logits, TensorView targets, int vocab_size,
                             bool compute_gradient, float gradient_scale, const StepStatus* status) {
    const char* op = "classifier";
    const int64_t Vp = expect_columns(op, "logits", logits);
    const int64_t rows = expect_rows(op, "logits", logits, logits.dtype, Vp);
    expect_indices(op, "targets", targets, rows);
    expect_elements(op, "losses", losses, DType::f32, rows);
    MIXGPT_REQUIRE(vocab_size > 0 && vocab_size <= Vp, "cuda classifier: vocab_size " +
                                                           std::to_string(vocab_size) + " is outside [1, " +
                                                           std::to_string(Vp) + "]");
    if (rows == 0) return;
    dispatch_dtype(logits.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_classifier<T>(stream_, compute_gradient, losses.as<float>(), logits.as<T>(),
                             targets.as<const int32_t>(), rows, static_cast<int>(Vp), vocab_size,
                             gradient_scale, status);
    });
}

}  // namespace mixgpt::cuda
