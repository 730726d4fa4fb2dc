// The fused classifier: logit soft-cap, softmax, cross-entropy loss, z-loss and logit gradients
// in one kernel, one block per row. Pass 1 keeps a running (max, sum of exponentials) per thread
// over the real vocabulary and combines them in a fixed tree; pass 2 overwrites the logits with
// their gradients (or, without gradients, with the capped logits) in place. The soft-cap is
// recomputed in each pass rather than stored. No fp32 probabilities are stored anywhere.
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/online_softmax.cuh"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 512;

// c = softcap · tanh(z / softcap); z itself when softcap is 0 (kernels/ops.h, ClassifierParams).
__device__ __forceinline__ float capped(float z, float softcap) {
    return softcap > 0.f ? softcap * tanhf(z / softcap) : z;
}

// Row blockIdx.x of logits (rows,Vp): with c the capped logits, losses[row] = logsumexp(c[:V]) -
// c[target], z_losses[row] (if not null) = z_loss * logsumexp^2; with kGradient the row becomes
// gradient_scale * loss_scale * ((1 + 2 z_loss lse) softmax - onehot) * dc/dz, 0 past V; without
// it and under the soft-cap, c. A target outside [0, V) makes the row's loss and gradient NaN.
// N: elements per access.
template <typename T, int N, bool kGradient>
__global__ void __launch_bounds__(kThreads)
    classifier_kernel(float* losses, float* z_losses, T* logits, const int32_t* targets, int Vp, int V,
                      float softcap, float z_loss, float gradient_scale, const StepStatus* status) {
    declare_launch_limits<kThreads>();
    const int64_t row = blockIdx.x;
    T* x = logits + row * Vp;
    const int32_t target = targets[row];
    const bool valid_target = target >= 0 && target < V;
    const float target_logit =
        valid_target ? capped(to_float(x[target]), softcap) : __int_as_float(0x7fc00000);

    OnlineSum local;
    for (int j = threadIdx.x * N; j < V; j += blockDim.x * N) {
        float v[N];
        load_floats<N>(v, x + j);
#pragma unroll
        for (int i = 0; i < N; ++i)
            if (j + i < V) accumulate(local, capped(v[i], softcap));
    }
    const OnlineSum total = block_combine<kThreads>(local);
    const float lse = total.max + logf(total.sum);
    if (threadIdx.x == 0) {
        losses[row] = lse - target_logit;
        if (z_losses != nullptr) z_losses[row] = z_loss * lse * lse;
    }
    if (!kGradient) {
        if (softcap == 0.f) return;
        for (int j = threadIdx.x; j < V; j += blockDim.x)
            x[j] = from_float<T>(capped(to_float(x[j]), softcap));
        return;
    }

    const float factor = gradient_scale * (status != nullptr ? status->loss_scale : 1.f);
    const float softmax_factor = z_loss > 0.f ? 1.f + 2.f * z_loss * lse : 1.f;  // d(z_loss lse^2)/dc
    for (int j = threadIdx.x * N; j < Vp; j += blockDim.x * N) {
        float v[N];
        load_floats<N>(v, x + j);
#pragma unroll
        for (int i = 0; i < N; ++i) {
            const int column = j + i;
            const float onehot = column == target ? 1.f : 0.f;
            const float c = capped(v[i], softcap);
            const float p = z_loss > 0.f ? softmax_factor * expf(c - lse) : expf(c - lse);
            v[i] = column >= V ? 0.f : factor * (p - onehot);
            if (softcap > 0.f) {
                const float t = c / softcap;  // tanh(z / softcap)
                v[i] *= 1.f - t * t;
            }
            if (!valid_target) v[i] = __int_as_float(0x7fc00000);
        }
        store_floats<N>(x + j, v);
    }
}

// Columns [0, V) of row blockIdx.x of logits (rows,Vp) become capped(z): the classifier's values.
template <typename T>
__global__ void __launch_bounds__(kThreads) logit_softcap_kernel(T* logits, int Vp, int V, float softcap) {
    declare_launch_limits<kThreads>();
    T* x = logits + static_cast<int64_t>(blockIdx.x) * Vp;
    for (int j = threadIdx.x; j < V; j += blockDim.x) x[j] = from_float<T>(capped(to_float(x[j]), softcap));
}

template <typename T, int N>
void launch_classifier_with(cudaStream_t stream, bool gradient, float* losses, float* z_losses, T* logits,
                            const int32_t* targets, int64_t rows, int Vp, int V,
                            const ClassifierParams& params, float gradient_scale, const StepStatus* status) {
    const auto blocks = static_cast<unsigned>(rows);
    if (gradient)
        launch_kernel(classifier_kernel<T, N, true>, blocks, kThreads, 0, stream, losses, z_losses, logits,
                      targets, Vp, V, params.softcap, params.z_loss, gradient_scale, status);
    else
        launch_kernel(classifier_kernel<T, N, false>, blocks, kThreads, 0, stream, losses, z_losses, logits,
                      targets, Vp, V, params.softcap, params.z_loss, gradient_scale, status);
}

template <typename T>
void launch_classifier(cudaStream_t stream, bool gradient, float* losses, float* z_losses, T* logits,
                       const int32_t* targets, int64_t rows, int Vp, const ClassifierParams& params,
                       float gradient_scale, const StepStatus* status) {
    constexpr int N = kPack16<T>;
    const int V = params.vocab_size;
    if (Vp % N == 0 && all_aligned_16({logits}))
        launch_classifier_with<T, N>(stream, gradient, losses, z_losses, logits, targets, rows, Vp, V, params,
                                     gradient_scale, status);
    else
        launch_classifier_with<T, 1>(stream, gradient, losses, z_losses, logits, targets, rows, Vp, V, params,
                                     gradient_scale, status);
}

}  // namespace

void CudaBackend::classifier(TensorView losses, TensorView z_losses, TensorView logits, TensorView targets,
                             const ClassifierParams& params, bool compute_gradient, float gradient_scale,
                             const StepStatus* status) {
    const char* op = "classifier";
    const int64_t Vp = expect_columns(op, "logits", logits);
    const int64_t rows = expect_rows(op, "logits", logits, logits.dtype, Vp);
    expect_indices(op, "targets", targets, rows);
    expect_elements(op, "losses", losses, DType::f32, rows);
    if (z_losses.valid()) expect_elements(op, "z_losses", z_losses, DType::f32, rows);
    const int vocab_size = params.vocab_size;
    MIXGPT_REQUIRE(vocab_size > 0 && vocab_size <= Vp, "cuda classifier: vocab_size " +
                                                           std::to_string(vocab_size) + " is outside [1, " +
                                                           std::to_string(Vp) + "]");
    MIXGPT_REQUIRE(std::isfinite(params.softcap) && params.softcap >= 0.f && std::isfinite(params.z_loss) &&
                       params.z_loss >= 0.f,
                   "cuda classifier: softcap and z_loss must be finite and >= 0");
    if (rows == 0) return;
    float* z_terms = z_losses.valid() ? z_losses.as<float>() : nullptr;
    dispatch_dtype(logits.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_classifier<T>(stream_, compute_gradient, losses.as<float>(), z_terms, logits.as<T>(),
                             targets.as<const int32_t>(), rows, static_cast<int>(Vp), params, gradient_scale,
                             status);
    });
}

void CudaBackend::logit_softcap(TensorView logits, int vocab_size, float softcap) {
    const char* op = "logit_softcap";
    const int64_t Vp = expect_columns(op, "logits", logits);
    const int64_t rows = expect_rows(op, "logits", logits, logits.dtype, Vp);
    MIXGPT_REQUIRE(vocab_size > 0 && vocab_size <= Vp, "cuda logit_softcap: vocab_size " +
                                                           std::to_string(vocab_size) + " is outside [1, " +
                                                           std::to_string(Vp) + "]");
    MIXGPT_REQUIRE(std::isfinite(softcap) && softcap > 0.f,
                   "cuda logit_softcap: softcap must be finite and > 0");
    if (rows == 0) return;
    dispatch_dtype(logits.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_kernel(logit_softcap_kernel<T>, static_cast<unsigned>(rows), kThreads, 0, stream_,
                      logits.as<T>(), static_cast<int>(Vp), vocab_size, softcap);
    });
}

}  // namespace mixgpt::cuda
