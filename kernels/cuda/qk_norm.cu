// QK-norm (--qk-norm) forward and backward in place on the packed qkv rows (kernels/ops.def): one
// warp per query or key head, FP32 statistics summed by the warp, 16-byte accesses when the head
// width and the row allow them. Memory-bound: it reads and writes the q and k columns once.
#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;  // heads per block

// The normalised heads: the first `heads` (H + Hkv) of each `width`-wide row, hd elements each.
struct QkLayout {
    int64_t rows;
    int heads;
    int width;
    int head_dim;
};

// The head a warp owns (row * heads + head), or -1 past the last one.
__device__ __forceinline__ int64_t warp_head(const QkLayout& layout) {
    const int64_t head = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / kWarpSize;
    return head < layout.rows * layout.heads ? head : -1;
}

__device__ __forceinline__ int64_t head_offset(const QkLayout& layout, int64_t head) {
    return head / layout.heads * layout.width + head % layout.heads * int64_t{layout.head_dim};
}

// x (hd) of each head becomes x * rstd, rstd (rows * heads) = 1 / sqrt(mean(x^2) + epsilon). N:
// elements per access (hd % N == 0, rows N*sizeof(T)-aligned).
template <typename T, int N>
__global__ void qk_norm_forward_kernel(T* qkv, float* rstd, QkLayout layout, float epsilon) {
    declare_launch_limits<kWarpsPerBlock * kWarpSize>();
    const int64_t head = warp_head(layout);
    if (head < 0) return;
    const int lane = threadIdx.x % kWarpSize;
    T* x = qkv + head_offset(layout, head);
    float squares = 0.f;
    for (int i = lane * N; i < layout.head_dim; i += kWarpSize * N) {
        float v[N];
        load_floats<N>(v, x + i);
#pragma unroll
        for (int j = 0; j < N; ++j) squares += v[j] * v[j];
    }
    const float head_rstd = 1.f / sqrtf(warp_sum(squares) / static_cast<float>(layout.head_dim) + epsilon);
    for (int i = lane * N; i < layout.head_dim; i += kWarpSize * N) {
        float v[N];
        load_floats<N>(v, x + i);
#pragma unroll
        for (int j = 0; j < N; ++j) v[j] *= head_rstd;
        store_floats<N>(x + i, v);
    }
    if (lane == 0) rstd[head] = head_rstd;
}

// dy (hd) of each head becomes rstd * (dy - y * mean(dy * y)), y the normalised head.
template <typename T, int N>
__global__ void qk_norm_backward_kernel(T* dqkv, const T* qkv, const float* rstd, QkLayout layout) {
    declare_launch_limits<kWarpsPerBlock * kWarpSize>();
    const int64_t head = warp_head(layout);
    if (head < 0) return;
    const int lane = threadIdx.x % kWarpSize;
    const int64_t offset = head_offset(layout, head);
    float dy_y = 0.f;
    for (int i = lane * N; i < layout.head_dim; i += kWarpSize * N) {
        float dy[N], y[N];
        load_floats<N>(dy, dqkv + offset + i);
        load_floats<N>(y, qkv + offset + i);
#pragma unroll
        for (int j = 0; j < N; ++j) dy_y += dy[j] * y[j];
    }
    const float mean_dy_y = warp_sum(dy_y) / static_cast<float>(layout.head_dim);
    const float head_rstd = rstd[head];
    for (int i = lane * N; i < layout.head_dim; i += kWarpSize * N) {
        float dy[N], y[N];
        load_floats<N>(dy, dqkv + offset + i);
        load_floats<N>(y, qkv + offset + i);
#pragma unroll
        for (int j = 0; j < N; ++j) dy[j] = head_rstd * (dy[j] - y[j] * mean_dy_y);
        store_floats<N>(dqkv + offset + i, dy);
    }
}

// Checks qkv (B,T,(H+2·Hkv)·hd) and rstd (B,T,H+Hkv); returns the layout.
QkLayout check_qk_norm(const char* op, const TensorView& qkv, const TensorView& rstd, int n_head, int n_kv_head) {
    expect_rank(op, "qkv", qkv, 3);
    MIXGPT_REQUIRE(n_head > 0 && n_kv_head > 0 && n_head % n_kv_head == 0,
                   format("cuda %s: n_head %d, n_kv_head %d: n_kv_head must be positive and divide n_head", op,
                          n_head, n_kv_head));
    const int64_t width = qkv.dim(2), all_heads = n_head + 2 * int64_t{n_kv_head};
    MIXGPT_REQUIRE(width % all_heads == 0,
                   format("cuda %s: qkv's rows are %lld wide, not a multiple of n_head + 2 n_kv_head = %lld", op,
                          static_cast<long long>(width), static_cast<long long>(all_heads)));
    const int heads = n_head + n_kv_head;
    expect_tensor(op, "rstd", rstd, DType::f32, {qkv.dim(0), qkv.dim(1), heads});
    return {qkv.dim(0) * qkv.dim(1), heads, static_cast<int>(width), static_cast<int>(width / all_heads)};
}

template <typename T>
bool packed_heads(const QkLayout& layout, std::initializer_list<const void*> pointers) {
    return layout.head_dim % kPack16<T> == 0 && all_aligned_16(pointers);
}

}  // namespace

void CudaBackend::qk_norm_forward(TensorView qkv, TensorView rstd, int n_head, int n_kv_head, float epsilon) {
    const char* op = "qk_norm_forward";
    const QkLayout layout = check_qk_norm(op, qkv, rstd, n_head, n_kv_head);
    MIXGPT_REQUIRE(epsilon > 0.f,
                   format("cuda %s: epsilon is %g, expected > 0", op, static_cast<double>(epsilon)));
    if (layout.rows == 0) return;
    const unsigned blocks = blocks_for(layout.rows * layout.heads, kWarpsPerBlock);
    dispatch_dtype(qkv.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (packed_heads<T>(layout, {qkv.data}))
            launch_kernel(qk_norm_forward_kernel<T, kPack16<T>>, blocks, kWarpsPerBlock * kWarpSize, 0, stream_,
                          qkv.as<T>(), rstd.as<float>(), layout, epsilon);
        else
            launch_kernel(qk_norm_forward_kernel<T, 1>, blocks, kWarpsPerBlock * kWarpSize, 0, stream_,
                          qkv.as<T>(), rstd.as<float>(), layout, epsilon);
    });
}

void CudaBackend::qk_norm_backward(TensorView dqkv, TensorView qkv, TensorView rstd, int n_head, int n_kv_head) {
    const char* op = "qk_norm_backward";
    const QkLayout layout = check_qk_norm(op, qkv, rstd, n_head, n_kv_head);
    expect_tensor(op, "dqkv", dqkv, qkv.dtype, {qkv.dim(0), qkv.dim(1), qkv.dim(2)});
    if (layout.rows == 0) return;
    const unsigned blocks = blocks_for(layout.rows * layout.heads, kWarpsPerBlock);
    dispatch_dtype(qkv.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (packed_heads<T>(layout, {qkv.data, dqkv.data}))
            launch_kernel(qk_norm_backward_kernel<T, kPack16<T>>, blocks, kWarpsPerBlock * kWarpSize, 0, stream_,
                          dqkv.as<T>(), qkv.as<const T>(), rstd.as<const float>(), layout);
        else
            launch_kernel(qk_norm_backward_kernel<T, 1>, blocks, kWarpsPerBlock * kWarpSize, 0, stream_,
                          dqkv.as<T>(), qkv.as<const T>(), rstd.as<const float>(), layout);
    });
}

}  // namespace mixgpt::cuda
