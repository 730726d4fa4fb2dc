// Causal multi-head attention: a simple, exact, tiled kernel for what the fused flash
// kernels (flash_attention.h) do not take. Nothing of size T×T is stored.
//
// Every kernel gives one warp to one row (a query, or in the key-side backward
// a key) and walks the other side in tiles of 32 rows staged in shared memory as
// fp32: lane j works on row j of the tile for the dot products, then the warp
// accumulates its output row, lane l holding head dimensions l, l+32, ...
// The forward keeps an online softmax (running max and sum) and writes the
// log-sum-exp. The backward recomputes the probabilities from it:
//   query side: delta_t = sum_s P_ts dP_ts, then dq_t = scale sum_s P_ts (dP_ts - delta_t) k_s
//   key side:   dk_s = scale sum_t P_ts (dP_ts - delta_t) q_t,  dv_s = sum_t P_ts dout_t
// with dP_ts = dout_t · v_s. All sums run in a fixed order: deterministic.
#include <climits>
#include <cmath>
#include <type_traits>

#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kTile = kWarpSize;  // rows of the other side per shared-memory tile
constexpr int kWarps = 8;         // rows per block
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kMaxHeadDim = 128;

// Where the forward reads q, k, v and writes out: one (b, head) slice each, rows
// `row_stride` apart, batches `batch_stride` apart, the head's columns at head * head_dim.
template <typename T>
struct ForwardArgs {
    const T* q;
    int64_t q_batch_stride, q_row_stride;
    const T* k;
    const T* v;
    int64_t kv_batch_stride, kv_row_stride;
    T* out;
    int64_t out_batch_stride, out_row_stride;
    float* lse;        // (B,H,queries), or null
    int queries;       // query rows of this call
    int query_offset;  // absolute position of query 0; query t sees keys 0..query_offset+t
    int heads, head_dim;
    float scale;
};

// The training layout: qkv, dqkv (B,T,3C), out, dout (B,T,C), lse, delta (B,H,T).
template <typename T>
struct BackwardArgs {
    T* dqkv;
    const T* qkv;
    const T* dout;
    const float* lse;
    float* delta;
    int T_len, C, heads, head_dim;
    float scale;
};

// tile[j][d] (kTile rows, `pitch` floats apart) = rows first+j of `base` (rows `row_stride`
// apart), head_dim columns; rows at or past `count` are zero. The whole block loads.
template <typename T>
__device__ void load_tile(SharedPointer<float> tile, int pitch, const T* base, int64_t row_stride, int first,
                          int count, int head_dim) {
    for (int e = threadIdx.x; e < kTile * head_dim; e += blockDim.x) {
        const int j = e / head_dim;
        const int d = e % head_dim;
        const int row = first + j;
        tile[j * pitch + d] = row < count ? to_float(base[int64_t{row} * row_stride + d]) : 0.f;
    }
}

// One warp: row[d] = source[d] for d < head_dim.
template <typename T>
__device__ void load_row(SharedPointer<float> row, const T* source, int head_dim) {
    for (int d = threadIdx.x % kWarpSize; d < head_dim; d += kWarpSize) row[d] = to_float(source[d]);
}

__device__ __forceinline__ float dot(SharedPointer<const float> a, SharedPointer<const float> b,
                                     int head_dim) {
    float sum = 0.f;
    for (int d = 0; d < head_dim; ++d) sum += a[d] * b[d];
    return sum;
}

// Grid (B*H, ceil(queries / kWarps)); warp w of block (x, y) handles query y*kWarps + w.
// kDims: head dimensions per lane (head_dim <= 32 * kDims).
template <typename T, int kDims>
__global__ void attention_forward_kernel(ForwardArgs<T> a) {
    const SharedPointer<float> shared = dynamic_shared_memory<float>();
    const int hd = a.head_dim;
    const int pitch = hd + 1;  // odd: lane j reading row j hits a distinct bank
    const SharedPointer<float> k_tile = shared;
    const SharedPointer<float> v_tile = k_tile + kTile * pitch;
    const int warp = threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    const SharedPointer<float> q_row = v_tile + kTile * pitch + warp * hd;

    const int b = blockIdx.x / a.heads;
    const int h = blockIdx.x % a.heads;
    const int first_query = blockIdx.y * kWarps;
    const int t = first_query + warp;
    const bool active = t < a.queries;
    const int position = a.query_offset + t;
    const int key_count = a.query_offset + min(first_query + kWarps, a.queries);  // keys the block needs
    const T* k = a.k + b * a.kv_batch_stride + h * hd;
    const T* v = a.v + b * a.kv_batch_stride + h * hd;
    if (active) load_row(q_row, a.q + b * a.q_batch_stride + t * a.q_row_stride + h * hd, hd);

    float running_max = -INFINITY;
    float running_sum = 0.f;
    float acc[kDims] = {};
    for (int first_key = 0; first_key < key_count; first_key += kTile) {
        __syncthreads();  // the previous tile is consumed; q_row is visible to the warp
        load_tile(k_tile, pitch, k, a.kv_row_stride, first_key, key_count, hd);
        load_tile(v_tile, pitch, v, a.kv_row_stride, first_key, key_count, hd);
        __syncthreads();
        if (!active || first_key > position) continue;
        const bool visible = first_key + lane <= position;
        const float score = visible ? dot(q_row, k_tile + lane * pitch, hd) * a.scale : -INFINITY;
        const float new_max = fmaxf(running_max, warp_max(score));
        const float p = visible ? expf(score - new_max) : 0.f;
        const float rescale = expf(running_max - new_max);
        running_sum = running_sum * rescale + warp_sum(p);
#pragma unroll
        for (int i = 0; i < kDims; ++i) acc[i] *= rescale;
#pragma unroll 4
        for (int j = 0; j < kTile; ++j) {
            const float pj = __shfl_sync(kFullMask, p, j);
#pragma unroll
            for (int i = 0; i < kDims; ++i) {
                const int d = lane + i * kWarpSize;
                if (d < hd) acc[i] += pj * v_tile[j * pitch + d];
            }
        }
        running_max = new_max;
    }
    if (!active) return;
    T* out = a.out + b * a.out_batch_stride + t * a.out_row_stride + h * hd;
#pragma unroll
    for (int i = 0; i < kDims; ++i) {
        const int d = lane + i * kWarpSize;
        if (d < hd) out[d] = from_float<T>(acc[i] / running_sum);
    }
    if (a.lse != nullptr && lane == 0)
        a.lse[(int64_t{b} * a.heads + h) * a.queries + t] = running_max + logf(running_sum);
}

// Query side of the backward: delta (B,H,T) and the q part of dqkv. Grid as the forward.
template <typename T, int kDims>
__global__ void attention_backward_query_kernel(BackwardArgs<T> a) {
    const SharedPointer<float> shared = dynamic_shared_memory<float>();
    const int hd = a.head_dim;
    const int pitch = hd + 1;
    const SharedPointer<float> k_tile = shared;
    const SharedPointer<float> v_tile = k_tile + kTile * pitch;
    const int warp = threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    const SharedPointer<float> q_row = v_tile + kTile * pitch + 2 * warp * hd;
    const SharedPointer<float> dout_row = q_row + hd;

    const int b = blockIdx.x / a.heads;
    const int h = blockIdx.x % a.heads;
    const int first_query = blockIdx.y * kWarps;
    const int t = first_query + warp;
    const bool active = t < a.T_len;
    const int key_count = min(first_query + kWarps, a.T_len);
    const int64_t row_stride = 3 * int64_t{a.C};
    const T* qkv = a.qkv + int64_t{b} * a.T_len * row_stride + h * hd;
    const int64_t stat = (int64_t{b} * a.heads + h) * a.T_len + t;
    const float lse = active ? a.lse[stat] : 0.f;
    if (active) {
        load_row(q_row, qkv + t * row_stride, hd);
        load_row(dout_row, a.dout + (int64_t{b} * a.T_len + t) * a.C + h * hd, hd);
    }

    // Lane's key of the tile: P and dP (0 when the key is not visible).
    const auto probability_terms = [&](int first_key, float& p, float& dp) {
        p = dp = 0.f;
        if (first_key + lane > t) return;
        p = expf(dot(q_row, k_tile + lane * pitch, hd) * a.scale - lse);
        dp = dot(dout_row, v_tile + lane * pitch, hd);
    };

    float delta_part = 0.f;
    for (int first_key = 0; first_key < key_count; first_key += kTile) {
        __syncthreads();
        load_tile(k_tile, pitch, qkv + a.C, row_stride, first_key, key_count, hd);
        load_tile(v_tile, pitch, qkv + 2 * a.C, row_stride, first_key, key_count, hd);
        __syncthreads();
        if (!active || first_key > t) continue;
        float p, dp;
        probability_terms(first_key, p, dp);
        delta_part += p * dp;
    }
    const float delta = warp_sum(delta_part);

    float dq[kDims] = {};
    for (int first_key = 0; first_key < key_count; first_key += kTile) {
        __syncthreads();
        load_tile(k_tile, pitch, qkv + a.C, row_stride, first_key, key_count, hd);
        load_tile(v_tile, pitch, qkv + 2 * a.C, row_stride, first_key, key_count, hd);
        __syncthreads();
        if (!active || first_key > t) continue;
        float p, dp;
        probability_terms(first_key, p, dp);
        const float ds = p * (dp - delta) * a.scale;
#pragma unroll 4
        for (int j = 0; j < kTile; ++j) {
            const float dsj = __shfl_sync(kFullMask, ds, j);
#pragma unroll
            for (int i = 0; i < kDims; ++i) {
                const int d = lane + i * kWarpSize;
                if (d < hd) dq[i] += dsj * k_tile[j * pitch + d];
            }
        }
    }
    if (!active) return;
    T* dq_out = a.dqkv + (int64_t{b} * a.T_len + t) * row_stride + h * hd;
#pragma unroll
    for (int i = 0; i < kDims; ++i) {
        const int d = lane + i * kWarpSize;
        if (d < hd) dq_out[d] = from_float<T>(dq[i]);
    }
    if (lane == 0) a.delta[stat] = delta;
}

// Key side of the backward: the k and v parts of dqkv. Grid (B*H, ceil(T / kWarps));
// warp w of block (x, y) handles key y*kWarps + w, walking queries from y*kWarps on.
template <typename T, int kDims>
__global__ void attention_backward_key_kernel(BackwardArgs<T> a) {
    const SharedPointer<float> shared = dynamic_shared_memory<float>();
    const int hd = a.head_dim;
    const int pitch = hd + 1;
    const SharedPointer<float> q_tile = shared;
    const SharedPointer<float> dout_tile = q_tile + kTile * pitch;
    const SharedPointer<float> lse_tile = dout_tile + kTile * pitch;
    const SharedPointer<float> delta_tile = lse_tile + kTile;
    const int warp = threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    const SharedPointer<float> k_row = delta_tile + kTile + 2 * warp * hd;
    const SharedPointer<float> v_row = k_row + hd;

    const int b = blockIdx.x / a.heads;
    const int h = blockIdx.x % a.heads;
    const int first_key = blockIdx.y * kWarps;
    const int s = first_key + warp;
    const bool active = s < a.T_len;
    const int64_t row_stride = 3 * int64_t{a.C};
    const T* qkv = a.qkv + int64_t{b} * a.T_len * row_stride + h * hd;
    const T* dout = a.dout + int64_t{b} * a.T_len * a.C + h * hd;
    const int64_t stats = (int64_t{b} * a.heads + h) * a.T_len;
    if (active) {
        load_row(k_row, qkv + s * row_stride + a.C, hd);
        load_row(v_row, qkv + s * row_stride + 2 * a.C, hd);
    }

    float dk[kDims] = {};
    float dv[kDims] = {};
    for (int first_query = first_key; first_query < a.T_len; first_query += kTile) {
        __syncthreads();
        load_tile(q_tile, pitch, qkv, row_stride, first_query, a.T_len, hd);
        load_tile(dout_tile, pitch, dout, a.C, first_query, a.T_len, hd);
        if (threadIdx.x < kTile) {
            const int t = first_query + threadIdx.x;
            lse_tile[threadIdx.x] = t < a.T_len ? a.lse[stats + t] : 0.f;
            delta_tile[threadIdx.x] = t < a.T_len ? a.delta[stats + t] : 0.f;
        }
        __syncthreads();
        if (!active) continue;
        const int t = first_query + lane;
        float p = 0.f, ds = 0.f;
        if (t >= s && t < a.T_len) {
            p = expf(dot(q_tile + lane * pitch, k_row, hd) * a.scale - lse_tile[lane]);
            const float dp = dot(dout_tile + lane * pitch, v_row, hd);
            ds = p * (dp - delta_tile[lane]) * a.scale;
        }
#pragma unroll 4
        for (int j = 0; j < kTile; ++j) {
            const float pj = __shfl_sync(kFullMask, p, j);
            const float dsj = __shfl_sync(kFullMask, ds, j);
#pragma unroll
            for (int i = 0; i < kDims; ++i) {
                const int d = lane + i * kWarpSize;
                if (d < hd) {
                    dk[i] += dsj * q_tile[j * pitch + d];
                    dv[i] += pj * dout_tile[j * pitch + d];
                }
            }
        }
    }
    if (!active) return;
    T* dk_out = a.dqkv + (int64_t{b} * a.T_len + s) * row_stride + a.C + h * hd;
    T* dv_out = dk_out + a.C;
#pragma unroll
    for (int i = 0; i < kDims; ++i) {
        const int d = lane + i * kWarpSize;
        if (d < hd) {
            dk_out[d] = from_float<T>(dk[i]);
            dv_out[d] = from_float<T>(dv[i]);
        }
    }
}

// k_cache, v_cache (B,maxT,C) rows [position, position+Tn) = the k, v parts of qkv (B,Tn,3C).
template <typename T>
__global__ void write_cache_kernel(T* k_cache, T* v_cache, const T* qkv, int64_t rows, int Tn, int max_T,
                                   int C, int position) {
    const int64_t index = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (index >= rows * C) return;
    const int64_t row = index / C;
    const int c = static_cast<int>(index % C);
    const int64_t b = row / Tn;
    const int64_t cache_row = b * max_T + position + row % Tn;
    k_cache[cache_row * C + c] = qkv[row * 3 * C + C + c];
    v_cache[cache_row * C + c] = qkv[row * 3 * C + 2 * C + c];
}

size_t forward_shared_bytes(int head_dim) {
    return (2 * size_t{kTile} * (head_dim + 1) + size_t{kWarps} * head_dim) * sizeof(float);
}
size_t query_shared_bytes(int head_dim) {
    return (2 * size_t{kTile} * (head_dim + 1) + 2 * size_t{kWarps} * head_dim) * sizeof(float);
}
size_t key_shared_bytes(int head_dim) {
    return (2 * size_t{kTile} * (head_dim + 2) + 2 * size_t{kWarps} * head_dim) * sizeof(float);
}

// Calls f(std::integral_constant<int, kDims>) for the head dimension.
template <typename F>
void dispatch_head_dim(int head_dim, F&& f) {
    if (head_dim <= 64)
        f(std::integral_constant<int, 2>{});
    else
        f(std::integral_constant<int, 4>{});
}

// (b, head) pairs along x (up to 2^31 - 1 blocks) and blocks of kWarps rows along y (up to
// 65535: T up to 524280). B*H along y would fail to launch from 65536 pairs on.
dim3 attention_grid(int64_t batches, int heads, int rows) {
    const int64_t pairs = batches * heads, row_blocks = blocks_for(rows, kWarps);
    MIXGPT_REQUIRE(pairs <= INT_MAX && row_blocks <= 65535,
                   format("cuda attention: B*n_head = %lld or %d rows are past the launch limits",
                          static_cast<long long>(pairs), rows));
    return dim3(static_cast<unsigned>(pairs), static_cast<unsigned>(row_blocks));
}

template <typename T>
void launch_attention_forward(cudaStream_t stream, const ForwardArgs<T>& args, int64_t batches) {
    const dim3 grid = attention_grid(batches, args.heads, args.queries);
    dispatch_head_dim(args.head_dim, [&](auto dims) {
        launch_kernel(attention_forward_kernel<T, decltype(dims)::value>, grid, kThreads,
                      forward_shared_bytes(args.head_dim), stream, args);
    });
}

template <typename T>
void launch_attention_backward(cudaStream_t stream, const BackwardArgs<T>& args, int64_t batches) {
    const dim3 grid = attention_grid(batches, args.heads, args.T_len);
    dispatch_head_dim(args.head_dim, [&](auto dims) {
        launch_kernel(attention_backward_query_kernel<T, decltype(dims)::value>, grid, kThreads,
                      query_shared_bytes(args.head_dim), stream, args);
        launch_kernel(attention_backward_key_kernel<T, decltype(dims)::value>, grid, kThreads,
                      key_shared_bytes(args.head_dim), stream, args);
    });
}

// qkv (B,T,3C) with C divisible by n_head and head_dim <= kMaxHeadDim; returns head_dim.
int check_heads(const char* op, int64_t C, int n_head) {
    MIXGPT_REQUIRE(n_head > 0 && C % n_head == 0, format("cuda %s: C = %lld is not divisible by n_head = %d",
                                                         op, static_cast<long long>(C), n_head));
    const int64_t head_dim = C / n_head;
    MIXGPT_REQUIRE(head_dim <= kMaxHeadDim,
                   format("cuda %s: head_dim %lld is above the %d this kernel supports", op,
                          static_cast<long long>(head_dim), kMaxHeadDim));
    return static_cast<int>(head_dim);
}

}  // namespace

void CudaBackend::attention_forward(TensorView out, TensorView lse, TensorView qkv, int n_head) {
    const char* op = "attention_forward";
    expect_rank(op, "qkv", qkv, 3);
    const int64_t B = qkv.dim(0), T_len = qkv.dim(1), C = qkv.dim(2) / 3;
    const DType act = qkv.dtype;
    expect_tensor(op, "qkv", qkv, act, {B, T_len, 3 * C});
    expect_tensor(op, "out", out, act, {B, T_len, C});
    expect_tensor(op, "lse", lse, DType::f32, {B, n_head, T_len});
    const int head_dim = check_heads(op, C, n_head);
    if (B * T_len == 0) return;
    // The flash kernels move 16-byte vectors; other views take the simple path.
    if (flash_attention_ && flash_attention_supported(act, head_dim) &&
        all_aligned_16({qkv.data, out.data})) {
        flash_attention_forward(out, lse, qkv, n_head, stream_);
        return;
    }
    dispatch_dtype(act, [&](auto tag) {
        using T = decltype(tag);
        ForwardArgs<T> args{};
        args.q = qkv.as<const T>();
        args.k = args.q + C;
        args.v = args.q + 2 * C;
        args.q_batch_stride = args.kv_batch_stride = T_len * 3 * C;
        args.q_row_stride = args.kv_row_stride = 3 * C;
        args.out = out.as<T>();
        args.out_batch_stride = T_len * C;
        args.out_row_stride = C;
        args.lse = lse.as<float>();
        args.queries = static_cast<int>(T_len);
        args.query_offset = 0;
        args.heads = n_head;
        args.head_dim = head_dim;
        args.scale = 1.f / std::sqrt(static_cast<float>(head_dim));
        launch_attention_forward(stream_, args, B);
    });
}

void CudaBackend::attention_backward(TensorView dqkv, TensorView dout, TensorView qkv, TensorView out,
                                     TensorView lse, int n_head) {
    const char* op = "attention_backward";
    expect_rank(op, "qkv", qkv, 3);
    const int64_t B = qkv.dim(0), T_len = qkv.dim(1), C = qkv.dim(2) / 3;
    const DType act = qkv.dtype;
    expect_tensor(op, "qkv", qkv, act, {B, T_len, 3 * C});
    expect_tensor(op, "dqkv", dqkv, act, {B, T_len, 3 * C});
    expect_tensor(op, "dout", dout, act, {B, T_len, C});
    expect_tensor(op, "out", out, act, {B, T_len, C});
    expect_tensor(op, "lse", lse, DType::f32, {B, n_head, T_len});
    const int head_dim = check_heads(op, C, n_head);
    if (B * T_len == 0) return;
    if (flash_attention_ && flash_attention_supported(act, head_dim) &&
        all_aligned_16({qkv.data, dqkv.data, dout.data, out.data})) {
        void* workspace = scratch_->get(ScratchSlot::attention_delta,
                                        flash_attention_backward_workspace_bytes(B, n_head, T_len));
        TensorView delta(workspace, DType::f32, {B, n_head, T_len});
        flash_attention_backward(dqkv, dout, qkv, out, lse, delta, n_head, stream_);
        return;
    }
    auto* delta = static_cast<float*>(
        scratch_->get(ScratchSlot::attention_delta, static_cast<size_t>(B * n_head * T_len) * sizeof(float)));
    dispatch_dtype(act, [&](auto tag) {
        using T = decltype(tag);
        BackwardArgs<T> args{};
        args.dqkv = dqkv.as<T>();
        args.qkv = qkv.as<const T>();
        args.dout = dout.as<const T>();
        args.lse = lse.as<const float>();
        args.delta = delta;
        args.T_len = static_cast<int>(T_len);
        args.C = static_cast<int>(C);
        args.heads = n_head;
        args.head_dim = head_dim;
        args.scale = 1.f / std::sqrt(static_cast<float>(head_dim));
        launch_attention_backward(stream_, args, B);
    });
}

void CudaBackend::attention_forward_cached(TensorView out, TensorView qkv, TensorView k_cache,
                                           TensorView v_cache, int position, int n_head) {
    const char* op = "attention_forward_cached";
    expect_rank(op, "qkv", qkv, 3);
    expect_rank(op, "k_cache", k_cache, 3);
    const int64_t B = qkv.dim(0), Tn = qkv.dim(1), C = qkv.dim(2) / 3, max_T = k_cache.dim(1);
    const DType act = qkv.dtype;
    expect_tensor(op, "qkv", qkv, act, {B, Tn, 3 * C});
    expect_tensor(op, "out", out, act, {B, Tn, C});
    expect_tensor(op, "k_cache", k_cache, act, {B, max_T, C});
    expect_tensor(op, "v_cache", v_cache, act, {B, max_T, C});
    MIXGPT_REQUIRE(position >= 0 && position + Tn <= max_T,
                   format("cuda %s: positions [%d, %lld) do not fit the cache's %lld", op, position,
                          static_cast<long long>(position + Tn), static_cast<long long>(max_T)));
    const int head_dim = check_heads(op, C, n_head);
    if (B * Tn == 0) return;
    dispatch_dtype(act, [&](auto tag) {
        using T = decltype(tag);
        constexpr int kCopyThreads = 256;
        launch_kernel(write_cache_kernel<T>, blocks_for(B * Tn * C, kCopyThreads), kCopyThreads, 0, stream_,
                      k_cache.as<T>(), v_cache.as<T>(), qkv.as<const T>(), B * Tn, static_cast<int>(Tn),
                      static_cast<int>(max_T), static_cast<int>(C), position);
        ForwardArgs<T> args{};
        args.q = qkv.as<const T>();
        args.q_batch_stride = Tn * 3 * C;
        args.q_row_stride = 3 * C;
        args.k = k_cache.as<const T>();
        args.v = v_cache.as<const T>();
        args.kv_batch_stride = max_T * C;
        args.kv_row_stride = C;
        args.out = out.as<T>();
        args.out_batch_stride = Tn * C;
        args.out_row_stride = C;
        args.lse = nullptr;
        args.queries = static_cast<int>(Tn);
        args.query_offset = position;
        args.heads = n_head;
        args.head_dim = head_dim;
        args.scale = 1.f / std::sqrt(static_cast<float>(head_dim));
        launch_attention_forward(stream_, args, B);
    });
}

}  // namespace mixgpt::cuda
