// ReLU² forward and backward (--mlp relu2): element-wise, in fp32, rounded once on store; 16-byte
// accesses when aligned.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/elementwise_launch.cuh"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;

// max(x, 0) that keeps a NaN, as the CPU backend's.
__device__ __forceinline__ float positive_part(float x) { return x < 0.f ? 0.f : x; }

// out (n) = relu(inp)^2; N elements per thread (n % N == 0).
template <typename T, int N>
__global__ void relu2_forward_kernel(T* out, const T* inp, int64_t n) {
    declare_launch_limits<kThreads>();
    const int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) * N;
    if (i >= n) return;
    float x[N];
    load_floats<N>(x, inp + i);
#pragma unroll
    for (int k = 0; k < N; ++k) {
        const float positive = positive_part(x[k]);
        x[k] = positive * positive;
    }
    store_floats<N>(out + i, x);
}

// dinp (n) = dout * 2 relu(inp); dinp may alias dout (each thread reads before it writes).
template <typename T, int N>
__global__ void relu2_backward_kernel(T* dinp, const T* dout, const T* inp, int64_t n) {
    declare_launch_limits<kThreads>();
    const int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) * N;
    if (i >= n) return;
    float dy[N], x[N];
    load_floats<N>(dy, dout + i);
    load_floats<N>(x, inp + i);
#pragma unroll
    for (int k = 0; k < N; ++k) dy[k] *= 2.f * positive_part(x[k]);
    store_floats<N>(dinp + i, dy);
}

}  // namespace

void CudaBackend::relu2_forward(TensorView out, TensorView inp) {
    const char* op = "relu2_forward";
    const int64_t columns = expect_columns(op, "out", out);
    const int64_t rows = expect_rows(op, "out", out, out.dtype, columns);
    expect_matrix(op, "inp", inp, out.dtype, rows, columns);
    if (out.numel() == 0) return;
    dispatch_dtype(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_elementwise(relu2_forward_kernel<T, kPack16<T>>, relu2_forward_kernel<T, 1>, kPack16<T>,
                           out.numel(), {out.data, inp.data}, kThreads, stream_, out.as<T>(),
                           inp.as<const T>(), out.numel());
    });
}

void CudaBackend::relu2_backward(TensorView dinp, TensorView dout, TensorView inp) {
    const char* op = "relu2_backward";
    const int64_t columns = expect_columns(op, "dinp", dinp);
    const int64_t rows = expect_rows(op, "dinp", dinp, dinp.dtype, columns);
    expect_matrix(op, "dout", dout, dinp.dtype, rows, columns);
    expect_matrix(op, "inp", inp, dinp.dtype, rows, columns);
    if (dinp.numel() == 0) return;
    dispatch_dtype(dinp.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_elementwise(relu2_backward_kernel<T, kPack16<T>>, relu2_backward_kernel<T, 1>, kPack16<T>,
                           dinp.numel(), {dinp.data, dout.data, inp.data}, kThreads, stream_, dinp.as<T>(),
                           dout.as<const T>(), inp.as<const T>(), dinp.numel());
    });
}

}  // namespace mixgpt::cuda
