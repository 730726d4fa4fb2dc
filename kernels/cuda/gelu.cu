// GELU (tanh approximation) forward and backward, for products whose GELU is not
// fused into the cuBLASLt epilogue. Element-wise, 16-byte accesses when aligned.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/elementwise_launch.cuh"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

__device__ __forceinline__ float gelu(float x) {
    return 0.5f * x * (1.f + tanhf(kSqrt2OverPi * (x + kCubic * x * x * x)));
}

__device__ __forceinline__ float gelu_derivative(float x) {
    const float tanh_inner = tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
    const float sech_squared = 1.f - tanh_inner * tanh_inner;
    return 0.5f * (1.f + tanh_inner) + 0.5f * x * sech_squared * kSqrt2OverPi * (1.f + 3.f * kCubic * x * x);
}

// out (n) = gelu(inp); N elements per thread (n % N == 0).
template <typename T, int N>
__global__ void gelu_forward_kernel(T* out, const T* inp, int64_t n) {
    declare_launch_limits<kThreads>();
    const int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) * N;
    if (i >= n) return;
    float x[N];
    load_floats<N>(x, inp + i);
#pragma unroll
    for (int k = 0; k < N; ++k) x[k] = gelu(x[k]);
    store_floats<N>(out + i, x);
}

// dinp (n) = dout * gelu'(pre_gelu); dinp may alias dout (each thread reads before it writes).
template <typename T, int N>
__global__ void gelu_backward_kernel(T* dinp, const T* dout, const T* pre_gelu, int64_t n) {
    declare_launch_limits<kThreads>();
    const int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) * N;
    if (i >= n) return;
    float dy[N], x[N];
    load_floats<N>(dy, dout + i);
    load_floats<N>(x, pre_gelu + i);
#pragma unroll
    for (int k = 0; k < N; ++k) dy[k] *= gelu_derivative(x[k]);
    store_floats<N>(dinp + i, dy);
}

}  // namespace

void CudaBackend::gelu_forward(TensorView out, TensorView inp) {
    const char* op = "gelu_forward";
    const int64_t columns = expect_columns(op, "out", out);
    const int64_t rows = expect_rows(op, "out", out, out.dtype, columns);
    expect_matrix(op, "inp", inp, out.dtype, rows, columns);
    if (out.numel() == 0) return;
    dispatch_dtype(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_elementwise(gelu_forward_kernel<T, kPack16<T>>, gelu_forward_kernel<T, 1>, kPack16<T>,
                           out.numel(), {out.data, inp.data}, kThreads, stream_, out.as<T>(),
                           inp.as<const T>(), out.numel());
    });
}

void CudaBackend::gelu_backward(TensorView dinp, TensorView dout, TensorView pre_gelu) {
    const char* op = "gelu_backward";
    const int64_t columns = expect_columns(op, "dinp", dinp);
    const int64_t rows = expect_rows(op, "dinp", dinp, dinp.dtype, columns);
    expect_matrix(op, "dout", dout, dinp.dtype, rows, columns);
    expect_matrix(op, "pre_gelu", pre_gelu, dinp.dtype, rows, columns);
    if (dinp.numel() == 0) return;
    dispatch_dtype(dinp.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_elementwise(gelu_backward_kernel<T, kPack16<T>>, gelu_backward_kernel<T, 1>, kPack16<T>,
                           dinp.numel(), {dinp.data, dout.data, pre_gelu.data}, kThreads, stream_,
                           dinp.as<T>(), dout.as<const T>(), pre_gelu.as<const T>(), dinp.numel());
    });
}

}  // namespace mixgpt::cuda
