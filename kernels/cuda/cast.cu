// Element-wise casts between the storage types and in-place fp32 scaling.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 4;  // elements per thread when the sizes and addresses allow

// out (n) = in (n) converted through fp32 (exact) and rounded to nearest even to To.
template <typename To, typename From, int N>
__global__ void cast_kernel(To* out, const From* in, int64_t n) {
    declare_launch_limits<kThreads>();
    const int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) * N;
    if (i >= n) return;
    float values[N];
    load_floats<N>(values, in + i);
    store_floats<N>(out + i, values);
}

// x (n) *= factor
template <int N>
__global__ void scale_kernel(float* x, float factor, int64_t n) {
    declare_launch_limits<kThreads>();
    const int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) * N;
    if (i >= n) return;
    float values[N];
    load_floats<N>(values, x + i);
#pragma unroll
    for (int k = 0; k < N; ++k) values[k] *= factor;
    store_floats<N>(x + i, values);
}

template <typename To, typename From>
void launch_cast(cudaStream_t stream, To* out, const From* in, int64_t n) {
    if (n % kPerThread == 0 && is_aligned(out, kPerThread * sizeof(To)) &&
        is_aligned(in, kPerThread * sizeof(From)))
        launch_kernel(cast_kernel<To, From, kPerThread>, blocks_for(n / kPerThread, kThreads), kThreads, 0,
                      stream, out, in, n);
    else
        launch_kernel(cast_kernel<To, From, 1>, blocks_for(n, kThreads), kThreads, 0, stream, out, in, n);
}

void launch_scale(cudaStream_t stream, float* x, float factor, int64_t n) {
    if (n % kPerThread == 0 && is_aligned(x, kPerThread * sizeof(float)))
        launch_kernel(scale_kernel<kPerThread>, blocks_for(n / kPerThread, kThreads), kThreads, 0, stream, x,
                      factor, n);
    else
        launch_kernel(scale_kernel<1>, blocks_for(n, kThreads), kThreads, 0, stream, x, factor, n);
}

}  // namespace

void CudaBackend::cast(TensorView out, TensorView in) {
    const char* op = "cast";
    expect_elements(op, "in", in, in.dtype, out.numel());
    expect_elements(op, "out", out, out.dtype, in.numel());
    if (out.numel() == 0) return;
    dispatch_dtype(out.dtype, [&](auto out_tag) {
        dispatch_dtype(in.dtype, [&](auto in_tag) {
            using To = decltype(out_tag);
            using From = decltype(in_tag);
            launch_cast<To, From>(stream_, out.as<To>(), in.as<const From>(), out.numel());
        });
    });
}

void CudaBackend::scale(TensorView x, float factor) {
    expect_elements("scale", "x", x, DType::f32, x.numel());
    if (x.numel() == 0) return;
    launch_scale(stream_, x.as<float>(), factor, x.numel());
}

}  // namespace mixgpt::cuda
