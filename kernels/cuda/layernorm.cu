// LayerNorm forward (optionally fused with the residual add) and backward.
//
// One warp per row, FP32 statistics, 16-byte loads and stores when the rows are
// aligned. The backward's dweight/dbias are deterministic: every lane owns fixed
// columns of its warp's shared-memory accumulators, warps are summed in a fixed
// order into one partial row per block, and a second kernel sums the blocks'
// partials in block order. A lane's N columns sit rotated in its N accumulator
// words (accumulator_index, norm_backward_layout.cuh), so that the warp's 32 accesses
// of one element fall on 32 banks rather than 32 / N. Parameter-free (weight and bias null): weight
// 1 and bias 0 in registers and no parameter gradients summed: the forward's bits are the affine
// norm's with ones and zeros; the backward's may differ in the last bit (the compiler fuses the
// products differently with the 1 folded away).
#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/norm_backward_layout.cuh"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr float kEpsilon = 1e-5f;
constexpr int kForwardWarps = 8;  // rows per forward block
constexpr int kParameterGradientThreads = 256;

template <typename T>
__device__ __forceinline__ float round_through(float value) {
    return to_float(from_float<T>(value));
}

// out (rows,C) = LN(x) * weight + bias; mean, rstd (rows). With kResidual,
// x = residual_out = residual_in + branch (rounded to T) is written first.
// N: elements per access (C % N == 0 and every pointer N*sizeof(T)-aligned).
template <typename T, int N, bool kResidual>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, T* residual_out, const T* inp,
                                         const T* branch, const T* weight, const T* bias, int64_t rows,
                                         int C) {
    declare_launch_limits<kForwardWarps * kWarpSize>();
    const int lane = threadIdx.x % kWarpSize;
    const int64_t row = int64_t{blockIdx.x} * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
    if (row >= rows) return;
    const int64_t offset = row * C;
    const T* x = kResidual ? residual_out + offset : inp + offset;

    float sum = 0.f;
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
        for (int i = 0; i < N; ++i) sum += v[i];
    }
    const float row_mean = warp_sum(sum) / static_cast<float>(C);

    float squares = 0.f;
    for (int c = lane * N; c < C; c += kWarpSize * N) {
        float v[N];
        load_floats<N>(v, x + c);
#pragma unroll
        for (int i = 0; i < N; ++i) squares += (v[i] - row_mean) * (v[i] - row_mean);
    }
    const float row_rstd = 1.f / sqrtf(warp_sum(squares) / static_cast<float>(C) + kEpsilon);

    for (int c = lane * N; c < C; c += kWarpSize * N) {
        float v[N], w[N], b[N], y[N];
        load_floats<N>(v, x + c);
        load_floats_or<N>(w, weight, c, 1.f);
        load_floats_or<N>(b, bias, c, 0.f);
#pragma unroll
        for (int i = 0; i < N; ++i) y[i] = (v[i] - row_mean) * row_rstd * w[i] + b[i];
        store_floats<N>(out + offset + c, y);
    }
    if (lane == 0) {
        mean[row] = row_mean;
        rstd[row] = row_rstd;
    }
}

// dinp (rows,C) += the input gradient of each row; partials (gridDim.x, 2C) receive
// this block's column sums of dout * xhat (dweight) and of dout (dbias).
// Dynamic shared memory: 2C floats per warp.
template <typename T, int N>
__global__ void layernorm_backward_kernel(T* dinp, float* partials, const T* dout, const T* inp,
                                          const T* weight, const float* mean, const float* rstd, int64_t rows,
                                          int C) {
    declare_launch_limits<kNormBackwardMaxWarps * kWarpSize, kDeviceSharedLimit>();
    const SharedPointer<float> accumulators = dynamic_shared_memory<float>();  // (warps, 2C)
    const int warps = blockDim.x / kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    const SharedPointer<float> dweight_acc = accumulators + size_t{2} * C * warp;
    const SharedPointer<float> dbias_acc = dweight_acc + C;
    const int rotation = lane * N / kWarpSize;  // column c + i is at c + (i + rotation) % N
    // Each lane zeroes and accumulates only its own columns: no synchronization needed until the end.
    for (int c = lane * N; c < C; c += kWarpSize * N)
#pragma unroll
        for (int i = 0; i < N; ++i) {
            dweight_acc[c + (i + rotation) % N] = 0.f;
            dbias_acc[c + (i + rotation) % N] = 0.f;
        }

    const int64_t stride = int64_t{gridDim.x} * warps;
    for (int64_t row = int64_t{blockIdx.x} * warps + warp; row < rows; row += stride) {
        const int64_t offset = row * C;
        const float row_mean = mean[row];
        const float row_rstd = rstd[row];
        float dxhat_sum = 0.f, dxhat_xhat_sum = 0.f;
        for (int c = lane * N; c < C; c += kWarpSize * N) {
            float dy[N], x[N], w[N];
            load_floats<N>(dy, dout + offset + c);
            load_floats<N>(x, inp + offset + c);
            load_floats_or<N>(w, weight, c, 1.f);
#pragma unroll
            for (int i = 0; i < N; ++i) {
                const float xhat = (x[i] - row_mean) * row_rstd;
                const float dxhat = dy[i] * w[i];
                dxhat_sum += dxhat;
                dxhat_xhat_sum += dxhat * xhat;
                dweight_acc[c + (i + rotation) % N] += dy[i] * xhat;
                dbias_acc[c + (i + rotation) % N] += dy[i];
            }
        }
        const float mean_dxhat = warp_sum(dxhat_sum) / static_cast<float>(C);
        const float mean_dxhat_xhat = warp_sum(dxhat_xhat_sum) / static_cast<float>(C);
        for (int c = lane * N; c < C; c += kWarpSize * N) {
            float dy[N], x[N], w[N], dx[N];
            load_floats<N>(dy, dout + offset + c);
            load_floats<N>(x, inp + offset + c);
            load_floats_or<N>(w, weight, c, 1.f);
            load_floats<N>(dx, dinp + offset + c);
#pragma unroll
            for (int i = 0; i < N; ++i) {
                const float xhat = (x[i] - row_mean) * row_rstd;
                dx[i] += row_rstd * (dy[i] * w[i] - mean_dxhat - xhat * mean_dxhat_xhat);
            }
            store_floats<N>(dinp + offset + c, dx);
        }
    }
    __syncthreads();
    float* block_partials = partials + size_t{2} * C * blockIdx.x;
    for (int c = threadIdx.x; c < 2 * C; c += blockDim.x) {
        const int index = c < C ? accumulator_index<N>(c) : C + accumulator_index<N>(c - C);
        float total = 0.f;
        for (int w = 0; w < warps; ++w) total += accumulators[size_t{2} * C * w + index];
        block_partials[c] = total;
    }
}

// dweight (C) += sum over blocks of partials[:, :C]; dbias (C) += of partials[:, C:].
__global__ void layernorm_parameter_gradients_kernel(float* dweight, float* dbias, const float* partials,
                                                     int blocks, int C) {
    declare_launch_limits<kParameterGradientThreads>();
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= 2 * C) return;
    float total = 0.f;
    for (int b = 0; b < blocks; ++b) total += partials[size_t{2} * C * b + c];
    if (c < C)
        dweight[c] += total;
    else
        dbias[c - C] += total;
}

template <typename T, bool kResidual>
void launch_layernorm_forward(cudaStream_t stream, T* out, float* mean, float* rstd, T* residual_out,
                              const T* inp, const T* branch, const T* weight, const T* bias, int64_t rows,
                              int C) {
    const unsigned blocks = blocks_for(rows, kForwardWarps);
    const int threads = kForwardWarps * kWarpSize;
    if (C % kPack16<T> == 0 && all_aligned_16({out, residual_out, inp, branch, weight, bias}))
        launch_kernel(layernorm_forward_kernel<T, kPack16<T>, kResidual>, blocks, threads, 0, stream, out,
                      mean, rstd, residual_out, inp, branch, weight, bias, rows, C);
    else
        launch_kernel(layernorm_forward_kernel<T, 1, kResidual>, blocks, threads, 0, stream, out, mean, rstd,
                      residual_out, inp, branch, weight, bias, rows, C);
}

template <typename T>
void launch_layernorm_backward(cudaStream_t stream, const NormBackwardLayout& layout, T* dinp, float* dweight,
                               float* dbias, float* partials, const T* dout, const T* inp, const T* weight,
                               const float* mean, const float* rstd, int64_t rows, int C) {
    const int threads = layout.warps * kWarpSize;
    const auto launch = [&](auto kernel) {
        if (layout.shared_bytes > kNormDefaultSharedBytes)
            CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(layout.shared_bytes)));
        launch_kernel(kernel, layout.blocks, threads, layout.shared_bytes, stream, dinp, partials, dout, inp,
                      weight, mean, rstd, rows, C);
    };
    if (C % kPack16<T> == 0 && all_aligned_16({dinp, dout, inp, weight}))
        launch(layernorm_backward_kernel<T, kPack16<T>>);
    else
        launch(layernorm_backward_kernel<T, 1>);
    if (dweight == nullptr) return;  // parameter-free
    launch_kernel(layernorm_parameter_gradients_kernel, blocks_for(2 * int64_t{C}, kParameterGradientThreads),
                  kParameterGradientThreads, 0, stream, dweight, dbias, partials, layout.blocks, C);
}

// Checks the shared arguments of both forwards (weight and bias invalid: parameter-free); returns
// the number of rows.
int64_t check_forward(const char* op, const TensorView& out, const TensorView& mean, const TensorView& rstd,
                      const TensorView& weight, const TensorView& bias) {
    const int64_t C = expect_columns(op, "out", out);
    const DType act = out.dtype;
    const int64_t rows = expect_rows(op, "out", out, act, C);
    MIXGPT_REQUIRE(weight.valid() == bias.valid(),
                   format("cuda %s: weight and bias are both given, or both invalid (parameter-free)", op));
    if (weight.valid()) {
        expect_tensor(op, "weight", weight, act, {C});
        expect_tensor(op, "bias", bias, act, {C});
    }
    expect_tensor(op, "mean", mean, DType::f32, {rows});
    expect_tensor(op, "rstd", rstd, DType::f32, {rows});
    return rows;
}

}  // namespace

void CudaBackend::layernorm_forward(TensorView out, TensorView mean, TensorView rstd, TensorView inp,
                                    TensorView weight, TensorView bias) {
    const char* op = "layernorm_forward";
    const int64_t rows = check_forward(op, out, mean, rstd, weight, bias);
    const int C = static_cast<int>(out.dim(1));
    expect_matrix(op, "inp", inp, out.dtype, rows, C);
    if (rows == 0) return;
    dispatch_dtype(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_layernorm_forward<T, false>(stream_, out.as<T>(), mean.as<float>(), rstd.as<float>(), nullptr,
                                           inp.as<const T>(), nullptr, weight.as<const T>(),
                                           bias.as<const T>(), rows, C);
    });
}

void CudaBackend::residual_layernorm_forward(TensorView residual_out, TensorView out, TensorView mean,
                                             TensorView rstd, TensorView residual_in, TensorView branch,
                                             TensorView weight, TensorView bias) {
    const char* op = "residual_layernorm_forward";
    const int64_t rows = check_forward(op, out, mean, rstd, weight, bias);
    const int C = static_cast<int>(out.dim(1));
    expect_matrix(op, "residual_out", residual_out, out.dtype, rows, C);
    expect_matrix(op, "residual_in", residual_in, out.dtype, rows, C);
    expect_matrix(op, "branch", branch, out.dtype, rows, C);
    if (rows == 0) return;
    dispatch_dtype(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_layernorm_forward<T, true>(stream_, out.as<T>(), mean.as<float>(), rstd.as<float>(),
                                          residual_out.as<T>(), residual_in.as<const T>(),
                                          branch.as<const T>(), weight.as<const T>(), bias.as<const T>(),
                                          rows, C);
    });
}

void CudaBackend::layernorm_backward(TensorView dinp, TensorView dweight, TensorView dbias, TensorView dout,
                                     TensorView inp, TensorView weight, TensorView mean, TensorView rstd) {
    const char* op = "layernorm_backward";
    const int C = static_cast<int>(expect_columns(op, "dout", dout));
    const DType act = dout.dtype;
    const int64_t rows = expect_rows(op, "dout", dout, act, C);
    expect_matrix(op, "dinp", dinp, act, rows, C);
    expect_matrix(op, "inp", inp, act, rows, C);
    MIXGPT_REQUIRE(
        weight.valid() == dweight.valid() && weight.valid() == dbias.valid(),
        format("cuda %s: weight, dweight and dbias are all given, or all invalid (parameter-free)", op));
    if (weight.valid()) {
        expect_tensor(op, "weight", weight, act, {C});
        expect_tensor(op, "dweight", dweight, DType::f32, {C});
        expect_tensor(op, "dbias", dbias, DType::f32, {C});
    }
    expect_tensor(op, "mean", mean, DType::f32, {rows});
    expect_tensor(op, "rstd", rstd, DType::f32, {rows});
    if (rows == 0) return;
    const NormBackwardLayout layout =
        norm_backward_layout(op, rows, C, 2, multiprocessors_, shared_memory_optin_);
    auto* partials = static_cast<float*>(
        scratch_->get(ScratchSlot::layernorm_partials, size_t{2} * C * layout.blocks * sizeof(float)));
    dispatch_dtype(act, [&](auto tag) {
        using T = decltype(tag);
        launch_layernorm_backward<T>(stream_, layout, dinp.as<T>(), dweight.as<float>(), dbias.as<float>(),
                                     partials, dout.as<const T>(), inp.as<const T>(), weight.as<const T>(),
                                     mean.as<const float>(), rstd.as<const float>(), rows, C);
    });
}

}  // namespace mixgpt::cuda
