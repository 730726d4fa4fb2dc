// SwiGLU forward and backward over the [gate | up] product (M,2F) of one matmul: element-wise,
// one thread per N consecutive columns of a row, 16-byte accesses when F and the pointers allow.
#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

// out (M,F) = silu(gate) * up with gate, up the halves of gate_up (M,2F); N columns per thread
// (F % N == 0).
template <typename T, int N>
__global__ void swiglu_forward_kernel(T* out, const T* gate_up, int64_t M, int F) {
    declare_launch_limits<kThreads>();
    const int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) * N;
    if (i >= M * F) return;
    const int64_t row = i / F;
    const int column = static_cast<int>(i % F);
    const T* gate = gate_up + row * 2 * F + column;
    float g[N], u[N], y[N];
    load_floats<N>(g, gate);
    load_floats<N>(u, gate + F);
#pragma unroll
    for (int k = 0; k < N; ++k) y[k] = g[k] * sigmoid(g[k]) * u[k];
    store_floats<N>(out + i, y);
}

// dgate_up (M,2F) = [dout * up * silu'(gate) | dout * silu(gate)], silu'(g) = s (1 + g (1 - s)).
template <typename T, int N>
__global__ void swiglu_backward_kernel(T* dgate_up, const T* dout, const T* gate_up, int64_t M, int F) {
    declare_launch_limits<kThreads>();
    const int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) * N;
    if (i >= M * F) return;
    const int64_t row = i / F;
    const int column = static_cast<int>(i % F);
    const T* gate = gate_up + row * 2 * F + column;
    float dy[N], g[N], u[N], dg[N], du[N];
    load_floats<N>(dy, dout + i);
    load_floats<N>(g, gate);
    load_floats<N>(u, gate + F);
#pragma unroll
    for (int k = 0; k < N; ++k) {
        const float s = sigmoid(g[k]);
        dg[k] = dy[k] * u[k] * (s * (1.f + g[k] * (1.f - s)));
        du[k] = dy[k] * (g[k] * s);
    }
    T* dgate = dgate_up + row * 2 * F + column;
    store_floats<N>(dgate, dg);
    store_floats<N>(dgate + F, du);
}

template <typename T>
void launch_swiglu_forward(cudaStream_t stream, T* out, const T* gate_up, int64_t M, int F) {
    constexpr int N = kPack16<T>;
    const int64_t n = M * F;
    if (F % N == 0 && all_aligned_16({out, gate_up}))
        launch_kernel(swiglu_forward_kernel<T, N>, blocks_for(n / N, kThreads), kThreads, 0, stream, out,
                      gate_up, M, F);
    else
        launch_kernel(swiglu_forward_kernel<T, 1>, blocks_for(n, kThreads), kThreads, 0, stream, out, gate_up,
                      M, F);
}

template <typename T>
void launch_swiglu_backward(cudaStream_t stream, T* dgate_up, const T* dout, const T* gate_up, int64_t M,
                            int F) {
    constexpr int N = kPack16<T>;
    const int64_t n = M * F;
    if (F % N == 0 && all_aligned_16({dgate_up, dout, gate_up}))
        launch_kernel(swiglu_backward_kernel<T, N>, blocks_for(n / N, kThreads), kThreads, 0, stream,
                      dgate_up, dout, gate_up, M, F);
    else
        launch_kernel(swiglu_backward_kernel<T, 1>, blocks_for(n, kThreads), kThreads, 0, stream, dgate_up,
                      dout, gate_up, M, F);
}

struct Halves {
    int64_t M;  // rows
    int F;      // columns of each half
};

// gate_up (M,2F) and a (M,F) tensor of its dtype.
Halves check_halves(const char* op, const TensorView& gate_up, const TensorView& half,
                    const char* half_name) {
    const int64_t width = expect_columns(op, "gate_up", gate_up);
    MIXGPT_REQUIRE(width % 2 == 0,
                   format("cuda %s: gate_up's width %lld is odd: it holds [gate | up], F columns each", op,
                          static_cast<long long>(width)));
    const int64_t M = expect_rows(op, "gate_up", gate_up, gate_up.dtype, width);
    expect_matrix(op, half_name, half, gate_up.dtype, M, width / 2);
    return {M, static_cast<int>(width / 2)};
}

bool overlap(const TensorView& a, const TensorView& b) {
    const auto* a_begin = static_cast<const char*>(a.data);
    const auto* b_begin = static_cast<const char*>(b.data);
    return a_begin < b_begin + b.bytes() && b_begin < a_begin + a.bytes();
}

}  // namespace

void CudaBackend::swiglu_forward(TensorView out, TensorView gate_up) {
    const char* op = "swiglu_forward";
    const Halves halves = check_halves(op, gate_up, out, "out");
    const int64_t M = halves.M;
    const int F = halves.F;
    if (M * F == 0) return;
    dispatch_dtype(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_swiglu_forward<T>(stream_, out.as<T>(), gate_up.as<const T>(), M, F);
    });
}

void CudaBackend::swiglu_backward(TensorView dgate_up, TensorView dout, TensorView gate_up) {
    const char* op = "swiglu_backward";
    const Halves halves = check_halves(op, gate_up, dout, "dout");
    const int64_t M = halves.M;
    const int F = halves.F;
    expect_matrix(op, "dgate_up", dgate_up, gate_up.dtype, M, 2 * int64_t{F});
    MIXGPT_REQUIRE(
        !overlap(dgate_up, gate_up) && !overlap(dgate_up, dout),
        format("cuda %s: dgate_up overlaps gate_up or dout (it is written while they are read)", op));
    if (M * F == 0) return;
    dispatch_dtype(dout.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_swiglu_backward<T>(stream_, dgate_up.as<T>(), dout.as<const T>(), gate_up.as<const T>(), M, F);
    });
}

}  // namespace mixgpt::cuda
