// Muon's ops on the device (kernels/ops.def): the momentum update with the Frobenius norm (a
// fixed-grid sum in double, so its order depends on the size alone), the quintic Newton-Schulz
// iteration through cuBLASLt, each product one strided batch over the matrices of one shape (bf16
// or fp32 operands, fp32 accumulation, b A + c A A and a X + B X done by the product's alpha and
// beta with one rounding), and the
// update with the working copy. Every kernel reads StepStatus.skip on the device; the iteration's
// products run on a skipped step too (on whatever x holds), since the host never reads skip.
#include <algorithm>
#include <type_traits>

#include "core/cuda_check.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/op_checks.h"
#include "kernels/cuda/stochastic_rounding.cuh"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kNormBlocks = 64;  // fixed: the norm's partial sums depend on n only
constexpr int kPartials = kNormBlocks * kThreads;
constexpr float kNormEpsilon = 1e-7f;
constexpr float kA = 3.4445f, kB = -4.7750f, kC = 2.0315f;

__device__ __forceinline__ float muon_blend(float gradient, float momentum, float mu, bool nesterov) {
    return nesterov ? (1.f - mu) * gradient + mu * momentum : momentum;
}

// momentum (n) = mu momentum + (1 - mu) grads / loss_scale; partials (kPartials): each thread's sum
// in double of u^2 over its grid-strided share, u the (Nesterov) blend.
__global__ void muon_momentum_kernel(float* momentum, double* partials, const float* grads, int64_t n,
                                     float mu, bool nesterov, const StepStatus* status) {
    declare_launch_limits<kThreads>();
    if (status->skip != 0) return;
    const float factor = 1.f / status->loss_scale;
    const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    double sum = 0.0;
    for (int64_t i = first; i < n; i += int64_t{gridDim.x} * blockDim.x) {
        const float g = grads[i] * factor;
        const float m = mu * momentum[i] + (1.f - mu) * g;
        momentum[i] = m;
        const float u = muon_blend(g, m, mu, nesterov);
        sum += static_cast<double>(u) * u;
    }
    partials[first] = sum;
}

// One warp: *inverse = 1 / (sqrt(sum of the partials) + 1e-7), lane l adding partials l, l + 32, ...
// in order before the shuffle sum.
__global__ void muon_norm_kernel(float* inverse, const double* partials, int count,
                                 const StepStatus* status) {
    declare_launch_limits<kWarpSize>();
    if (status->skip != 0) return;
    double sum = 0.0;
    for (int i = threadIdx.x; i < count; i += kWarpSize) sum += partials[i];
    sum = warp_sum(sum);
    if (threadIdx.x == 0) *inverse = 1.f / (static_cast<float>(sqrt(sum)) + kNormEpsilon);
}

// x (n) X = u * inverse, u recomputed from grads and the new momentum as muon_momentum_kernel made it.
template <typename X>
__global__ void muon_normalize_kernel(X* x, const float* momentum, const float* grads, const float* inverse,
                                      int64_t n, float mu, bool nesterov, const StepStatus* status) {
    declare_launch_limits<kThreads>();
    if (status->skip != 0) return;
    const float factor = 1.f / status->loss_scale, scale = *inverse;
    for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
         i += int64_t{gridDim.x} * blockDim.x)
        x[i] = from_float<X>(muon_blend(grads[i] * factor, momentum[i], mu, nesterov) * scale);
}

// params (n) -= learning_rate (scale x + weight_decay params); working (n) W the new params (null: none),
// a bf16 one rounded stochastically by (seed, i) when `stochastic`.
template <typename W, typename X>
__global__ void muon_update_kernel(float* params, W* working, const X* x, int64_t n, float learning_rate,
                                   float scale, float weight_decay, bool stochastic, uint64_t seed,
                                   const StepStatus* status) {
    declare_launch_limits<kThreads>();
    if (status->skip != 0) return;
    for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
         i += int64_t{gridDim.x} * blockDim.x) {
        const float p = params[i] - learning_rate * (scale * to_float(x[i]) + weight_decay * params[i]);
        params[i] = p;
        if (working == nullptr) continue;
        if constexpr (std::is_same_v<W, __nv_bfloat16>)
            working[i] = stochastic ? stochastic_bf16(p, seed, i) : from_float<W>(p);
        else
            working[i] = from_float<W>(p);
    }
}

template <typename F>
void dispatch_muon_dtype(DType dtype, F&& f) {
    if (dtype == DType::bf16)
        f(__nv_bfloat16{});
    else
        f(float{});
}

void require_muon_x(const char* op, const TensorView& x) {
    MIXGPT_REQUIRE(x.valid() && (x.dtype == DType::f32 || x.dtype == DType::bf16),
                   format("cuda %s: x must be f32 or bf16", op));
}

// A batch of row-major products out (M,N) = alpha op(A) op(B) + beta c (null: none), A stored
// (M,K) or (K,M) when transpose_a, B (K,N) or (N,K) when transpose_b, all of one type, matrix i of
// each at i times its stride (elements; c at out's): cuBLASLt's column-major out^T = op(B)^T op(A)^T
// on the same memory.
struct RowMajorProduct {
    const void* a = nullptr;
    bool transpose_a = false;
    int64_t stride_a = 0;
    const void* b = nullptr;
    bool transpose_b = false;
    int64_t stride_b = 0;
    int64_t M = 0, N = 0, K = 0;
    float alpha = 1.f;
    const void* c = nullptr;
    float beta = 0.f;
};

void run_row_major(LtMatmulRunner& runner, void* out, const RowMajorProduct& r, int64_t batch,
                   cudaDataType type) {
    LtProduct p;
    p.a = r.b;
    p.transpose_a = r.transpose_b;
    p.lda = r.transpose_b ? r.K : r.N;
    p.b = r.a;
    p.transpose_b = r.transpose_a;
    p.ldb = r.transpose_a ? r.M : r.K;
    p.d = out;
    p.ldd = r.N;
    p.m = r.N;
    p.n = r.M;
    p.k = r.K;
    p.input_type = p.output_type = type;
    p.compute_type = CUBLAS_COMPUTE_32F;
    p.alpha = r.alpha;
    p.c = r.c;
    p.beta = r.beta;
    p.batch = static_cast<int>(batch);
    p.stride_a = r.stride_b;
    p.stride_b = r.stride_a;
    p.stride_d = r.M * r.N;
    runner.run(p, "cuda muon_newton_schulz");
}

size_t aligned_bytes(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

void CudaBackend::muon_momentum(TensorView x, TensorView momentum, TensorView grads, float mu, bool nesterov,
                                const StepStatus* status) {
    const char* op = "muon_momentum";
    MIXGPT_REQUIRE(status != nullptr, "cuda muon_momentum: status is missing (null)");
    expect_rank(op, "grads", grads, 2);
    const int64_t rows = grads.dim(0), cols = grads.dim(1), n = rows * cols;
    expect_matrix(op, "grads", grads, DType::f32, rows, cols);
    expect_matrix(op, "momentum", momentum, DType::f32, rows, cols);
    require_muon_x(op, x);
    expect_matrix(op, "x", x, x.dtype, rows, cols);
    auto* partials = static_cast<double*>(
        scratch_->get(ScratchSlot::muon_norm, kPartials * sizeof(double) + sizeof(float)));
    auto* inverse = reinterpret_cast<float*>(partials + kPartials);
    launch_kernel(muon_momentum_kernel, kNormBlocks, kThreads, 0, stream_, momentum.as<float>(), partials,
                  grads.as<const float>(), n, mu, nesterov, status);
    launch_kernel(muon_norm_kernel, 1, kWarpSize, 0, stream_, inverse, partials, kPartials, status);
    const auto blocks =
        static_cast<unsigned>(std::clamp<int64_t>(blocks_for(n, kThreads), 1, 8 * multiprocessors_));
    dispatch_muon_dtype(x.dtype, [&](auto tag) {
        using X = decltype(tag);
        launch_kernel(muon_normalize_kernel<X>, blocks, kThreads, 0, stream_, x.as<X>(),
                      momentum.as<const float>(), grads.as<const float>(), inverse, n, mu, nesterov, status);
    });
}

void CudaBackend::muon_newton_schulz(TensorView x, int steps, const StepStatus* status) {
    const char* op = "muon_newton_schulz";
    MIXGPT_REQUIRE(status != nullptr, "cuda muon_newton_schulz: status is missing (null)");
    require_muon_x(op, x);
    expect_rank(op, "x", x, 3);
    MIXGPT_REQUIRE(steps >= 0, "cuda muon_newton_schulz: steps must not be negative");
    const int64_t batch = x.dim(0), rows = x.dim(1), cols = x.dim(2), s = std::min(rows, cols);
    if (steps == 0 || batch * rows * cols == 0) return;
    const bool tall = rows > cols;
    const size_t element = dtype_size(x.dtype);
    const int64_t square = s * s, matrix = rows * cols;
    const size_t squares_bytes = aligned_bytes(static_cast<size_t>(batch * square) * element);
    const size_t matrices_bytes = static_cast<size_t>(batch * matrix) * element;
    auto* scratch = static_cast<char*>(
        scratch_->get(ScratchSlot::muon_iteration, 2 * squares_bytes + aligned_bytes(matrices_bytes)));
    void* gram = scratch;                      // (batch, s, s)
    void* poly = scratch + squares_bytes;      // (batch, s, s)
    void* next = scratch + 2 * squares_bytes;  // (batch, rows, cols)
    void* X = x.data;                          // (batch, rows, cols)
    const cudaDataType type = x.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F;
    for (int step = 0; step < steps; ++step) {
        // A (s, s) = X X^T, or X^T X for a tall X
        run_row_major(*matmuls_, gram, {X, tall, matrix, X, !tall, matrix, s, s, tall ? rows : cols}, batch,
                      type);
        // B = c A A + b A
        run_row_major(*matmuls_, poly, {gram, false, square, gram, false, square, s, s, s, kC, gram, kB},
                      batch, type);
        // next (rows, cols) = B X + a X, or X B + a X
        if (tall)
            run_row_major(*matmuls_, next,
                          {X, false, matrix, poly, false, square, rows, cols, cols, 1.f, X, kA}, batch, type);
        else
            run_row_major(*matmuls_, next,
                          {poly, false, square, X, false, matrix, rows, cols, rows, 1.f, X, kA}, batch, type);
        CUDA_CHECK(cudaMemcpyAsync(X, next, matrices_bytes, cudaMemcpyDeviceToDevice, stream_));
    }
}

void CudaBackend::muon_update(TensorView params, TensorView working, TensorView x, float learning_rate,
                              float scale, float weight_decay, bool stochastic_rounding, uint64_t seed,
                              const StepStatus* status) {
    const char* op = "muon_update";
    MIXGPT_REQUIRE(status != nullptr, "cuda muon_update: status is missing (null)");
    expect_rank(op, "params", params, 2);
    const int64_t rows = params.dim(0), cols = params.dim(1), n = rows * cols;
    expect_matrix(op, "params", params, DType::f32, rows, cols);
    require_muon_x(op, x);
    expect_matrix(op, "x", x, x.dtype, rows, cols);
    const bool separate_working = working.valid() && working.data != params.data;
    const DType act = activation_dtype(precision_);
    if (separate_working) expect_matrix(op, "working", working, act, rows, cols);
    MIXGPT_REQUIRE(separate_working || act == DType::f32,
                   "cuda muon_update: a 16-bit run needs a separate working copy");
    const auto blocks =
        static_cast<unsigned>(std::clamp<int64_t>(blocks_for(n, kThreads), 1, 8 * multiprocessors_));
    dispatch_muon_dtype(x.dtype, [&](auto x_tag) {
        using X = decltype(x_tag);
        if (!separate_working) {
            launch_kernel(muon_update_kernel<float, X>, blocks, kThreads, 0, stream_, params.as<float>(),
                          static_cast<float*>(nullptr), x.as<const X>(), n, learning_rate, scale,
                          weight_decay, false, seed, status);
            return;
        }
        dispatch_dtype(act, [&](auto w_tag) {
            using W = decltype(w_tag);
            launch_kernel(muon_update_kernel<W, X>, blocks, kThreads, 0, stream_, params.as<float>(),
                          working.as<W>(), x.as<const X>(), n, learning_rate, scale, weight_decay,
                          stochastic_rounding, seed, status);
        });
    });
}

}  // namespace mixgpt::cuda
