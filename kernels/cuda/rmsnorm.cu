// RMSNorm forward (optionally fused with the residual add) and backward, in the layout of
// LayerNorm's kernels (layernorm.cu): one warp per row, FP32 statistics, 16-byte loads and
// stores when the rows are aligned, and a deterministic dweight from per-warp column
// accumulators in shared memory (rotated as norm_backward_layout.cuh says), summed over warps in
// a fixed order into one partial row per block, then over blocks in block order. Parameter-free
// (weight null): the weight is 1 in registers and no dweight is summed: the forward's bits are the
// weighted norm's with a weight of ones; the backward's may differ in the last bit (with the 1
// folded away, the compiler fuses dy * xhat differently into the sums).
#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/norm_backward_layout.cuh"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kForwardWarps = 8;  // rows per forward block
constexpr int kWeightGradientThreads = 256;

template <typename T>
__device__ __forceinline__ float round_through(float value) {
    return to_float(from_float<T>(value));
}

// out (rows,C) = x * rstd * weight, rstd (rows) = 1 / sqrt(mean(x^2) + epsilon). With kResidual,
// x = residual_out = residual_in + branch (rounded to T) is written first. N: elements per access
// (C % N == 0 and every pointer N*sizeof(T)-aligned).
template <typename T, int N, bool kResidual>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, T* residual_out, const T* inp, const T* branch,
                                       const T* weight, int64_t rows, int C, float epsilon) {
    declare_launch_limits<kForwardWarps * kWarpSize>();
    const int lane = threadIdx.x % kWarpSize;
    const int64_t row = int64_t{blockIdx.x} * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
    if (row >= rows) return;
    const int64_t offset = row * C;
    const T* x = kResidual ? residual_out + offset : inp + offset;

    float squares = 0.f;
    for (int c = lane * N; c < C; c += kWarpSize * N) {
        float v[N];
        load_floats<N>(v, inp + offset + c);
        if (kResidual) {
            float b[N];
            load_floats<N>(b, branch + offset + c);
#pragma unroll
            for (int i = 0; i < N; ++i) v[i] = round_through<T>(v[i] + b[i]);
            store_floats<N>(residual_out + offset + c, v);
        }
#pragma unroll
        for (int i = 0; i < N; ++i) squares += v[i] * v[i];
    }
    const float row_rstd = 1.f / sqrtf(warp_sum(squares) / static_cast<float>(C) + epsilon);

    for (int c = lane * N; c < C; c += kWarpSize * N) {
        float v[N], w[N], y[N];
        load_floats<N>(v, x + c);
        load_floats_or<N>(w, weight, c, 1.f);
#pragma unroll
        for (int i = 0; i < N; ++i) y[i] = v[i] * row_rstd * w[i];
        store_floats<N>(out + offset + c, y);
    }
    if (lane == 0) rstd[row] = row_rstd;
}

// dinp (rows,C) += the input gradient of each row; partials (gridDim.x, C) receive this block's
// column sums of dout * xhat (dweight). Dynamic shared memory: C floats per warp.
template <typename T, int N>
__global__ void rmsnorm_backward_kernel(T* dinp, float* partials, const T* dout, const T* inp,
                                        const T* weight, const float* rstd, int64_t rows, int C) {
    declare_launch_limits<kNormBackwardMaxWarps * kWarpSize, kDeviceSharedLimit>();
    const SharedPointer<float> accumulators = dynamic_shared_memory<float>();  // (warps, C)
    const int warps = blockDim.x / kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    const SharedPointer<float> dweight_acc = accumulators + static_cast<size_t>(C) * warp;
    const int rotation = lane * N / kWarpSize;  // column c + i is at c + (i + rotation) % N
    // Each lane zeroes and accumulates only its own columns: no synchronization needed until the end.
    for (int c = lane * N; c < C; c += kWarpSize * N)
#pragma unroll
        for (int i = 0; i < N; ++i) dweight_acc[c + (i + rotation) % N] = 0.f;

    const int64_t stride = int64_t{gridDim.x} * warps;
    for (int64_t row = int64_t{blockIdx.x} * warps + warp; row < rows; row += stride) {
        const int64_t offset = row * C;
        const float row_rstd = rstd[row];
        float dxhat_xhat_sum = 0.f;
        for (int c = lane * N; c < C; c += kWarpSize * N) {
            float dy[N], x[N], w[N];
            load_floats<N>(dy, dout + offset + c);
            load_floats<N>(x, inp + offset + c);
            load_floats_or<N>(w, weight, c, 1.f);
#pragma unroll
            for (int i = 0; i < N; ++i) {
                const float xhat = x[i] * row_rstd;
                dxhat_xhat_sum += dy[i] * w[i] * xhat;
                dweight_acc[c + (i + rotation) % N] += dy[i] * xhat;
            }
        }
        const float mean_dxhat_xhat = warp_sum(dxhat_xhat_sum) / static_cast<float>(C);
        for (int c = lane * N; c < C; c += kWarpSize * N) {
            float dy[N], x[N], w[N], dx[N];
            load_floats<N>(dy, dout + offset + c);
            load_floats<N>(x, inp + offset + c);
            load_floats_or<N>(w, weight, c, 1.f);
            load_floats<N>(dx, dinp + offset + c);
#pragma unroll
            for (int i = 0; i < N; ++i)
                dx[i] += row_rstd * (dy[i] * w[i] - x[i] * row_rstd * mean_dxhat_xhat);
            store_floats<N>(dinp + offset + c, dx);
        }
    }
    __syncthreads();
    float* block_partials = partials + static_cast<size_t>(C) * blockIdx.x;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        const int index = accumulator_index<N>(c);
        float total = 0.f;
        for (int w = 0; w < warps; ++w) total += accumulators[static_cast<size_t>(C) * w + index];
        block_partials[c] = total;
    }
}

// dweight (C) += sum over blocks of partials (blocks, C), in block order.
__global__ void rmsnorm_weight_gradient_kernel(float* dweight, const float* partials, int blocks, int C) {
    declare_launch_limits<kWeightGradientThreads>();
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float total = 0.f;
    for (int b = 0; b < blocks; ++b) total += partials[static_cast<size_t>(C) * b + c];
    dweight[c] += total;
}

template <typename T, bool kResidual>
void launch_rmsnorm_forward(cudaStream_t stream, T* out, float* rstd, T* residual_out, const T* inp,
                            const T* branch, const T* weight, int64_t rows, int C, float epsilon) {
    const unsigned blocks = blocks_for(rows, kForwardWarps);
    const int threads = kForwardWarps * kWarpSize;
    if (C % kPack16<T> == 0 && all_aligned_16({out, residual_out, inp, branch, weight}))
        launch_kernel(rmsnorm_forward_kernel<T, kPack16<T>, kResidual>, blocks, threads, 0, stream, out, rstd,
                      residual_out, inp, branch, weight, rows, C, epsilon);
    else
        launch_kernel(rmsnorm_forward_kernel<T, 1, kResidual>, blocks, threads, 0, stream, out, rstd,
                      residual_out, inp, branch, weight, rows, C, epsilon);
}

template <typename T>
void launch_rmsnorm_backward(cudaStream_t stream, const NormBackwardLayout& layout, T* dinp, float* dweight,
                             float* partials, const T* dout, const T* inp, const T* weight, const float* rstd,
                             int64_t rows, int C) {
    const int threads = layout.warps * kWarpSize;
    const auto launch = [&](auto kernel) {
        if (layout.shared_bytes > kNormDefaultSharedBytes)
            CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(layout.shared_bytes)));
        launch_kernel(kernel, layout.blocks, threads, layout.shared_bytes, stream, dinp, partials, dout, inp,
                      weight, rstd, rows, C);
    };
    if (C % kPack16<T> == 0 && all_aligned_16({dinp, dout, inp, weight}))
        launch(rmsnorm_backward_kernel<T, kPack16<T>>);
    else
        launch(rmsnorm_backward_kernel<T, 1>);
    if (dweight == nullptr) return;  // parameter-free
    launch_kernel(rmsnorm_weight_gradient_kernel, blocks_for(C, kWeightGradientThreads),
                  kWeightGradientThreads, 0, stream, dweight, partials, layout.blocks, C);
}

// Checks the shared arguments of both forwards (weight invalid: parameter-free); returns the
// number of rows.
int64_t check_forward(const char* op, const TensorView& out, const TensorView& rstd, const TensorView& weight,
                      float epsilon) {
    const int64_t C = expect_columns(op, "out", out);
    const int64_t rows = expect_rows(op, "out", out, out.dtype, C);
    if (weight.valid()) expect_tensor(op, "weight", weight, out.dtype, {C});
    expect_tensor(op, "rstd", rstd, DType::f32, {rows});
    MIXGPT_REQUIRE(epsilon > 0.f,
                   format("cuda %s: epsilon is %g, expected > 0", op, static_cast<double>(epsilon)));
    return rows;
}

}  // namespace

void CudaBackend::rmsnorm_forward(TensorView out, TensorView rstd, TensorView inp, TensorView weight,
                                  float epsilon) {
    const char* op = "rmsnorm_forward";
    const int64_t rows = check_forward(op, out, rstd, weight, epsilon);
    const int C = static_cast<int>(out.dim(1));
    expect_matrix(op, "inp", inp, out.dtype, rows, C);
    if (rows == 0) return;
    dispatch_dtype(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_rmsnorm_forward<T, false>(stream_, out.as<T>(), rstd.as<float>(), nullptr, inp.as<const T>(),
                                         nullptr, weight.as<const T>(), rows, C, epsilon);
    });
}

void CudaBackend::residual_rmsnorm_forward(TensorView residual_out, TensorView out, TensorView rstd,
                                           TensorView residual_in, TensorView branch, TensorView weight,
                                           float epsilon) {
    const char* op = "residual_rmsnorm_forward";
    const int64_t rows = check_forward(op, out, rstd, weight, epsilon);
    const int C = static_cast<int>(out.dim(1));
    expect_matrix(op, "residual_out", residual_out, out.dtype, rows, C);
    expect_matrix(op, "residual_in", residual_in, out.dtype, rows, C);
    expect_matrix(op, "branch", branch, out.dtype, rows, C);
    if (rows == 0) return;
    dispatch_dtype(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_rmsnorm_forward<T, true>(stream_, out.as<T>(), rstd.as<float>(), residual_out.as<T>(),
                                        residual_in.as<const T>(), branch.as<const T>(), weight.as<const T>(),
                                        rows, C, epsilon);
    });
}

void CudaBackend::rmsnorm_backward(TensorView dinp, TensorView dweight, TensorView dout, TensorView inp,
                                   TensorView weight, TensorView rstd) {
    const char* op = "rmsnorm_backward";
    const int C = static_cast<int>(expect_columns(op, "dout", dout));
    const DType act = dout.dtype;
    const int64_t rows = expect_rows(op, "dout", dout, act, C);
    expect_matrix(op, "dinp", dinp, act, rows, C);
    expect_matrix(op, "inp", inp, act, rows, C);
    MIXGPT_REQUIRE(
        weight.valid() == dweight.valid(),
        format("cuda %s: weight and dweight are both given, or both invalid (parameter-free)", op));
    if (weight.valid()) {
        expect_tensor(op, "weight", weight, act, {C});
        expect_tensor(op, "dweight", dweight, DType::f32, {C});
    }
    expect_tensor(op, "rstd", rstd, DType::f32, {rows});
    if (rows == 0) return;
    const NormBackwardLayout layout =
        norm_backward_layout(op, rows, C, 1, multiprocessors_, shared_memory_optin_);
    auto* partials = static_cast<float*>(scratch_->get(
        ScratchSlot::layernorm_partials, static_cast<size_t>(C) * layout.blocks * sizeof(float)));
    dispatch_dtype(act, [&](auto tag) {
        using T = decltype(tag);
        launch_rmsnorm_backward<T>(stream_, layout, dinp.as<T>(), dweight.as<float>(), partials,
                                   dout.as<const T>(), inp.as<const T>(), weight.as<const T>(),
                                   rstd.as<const float>(), rows, C);
    });
}

}  // namespace mixgpt::cuda
