// The simple attention kernels: design in attention_simple.h.
#include "kernels/cuda/attention_simple.h"

#include <climits>
#include <type_traits>

#include "core/log.h"
#include "kernels/cuda/common.cuh"

namespace mixgpt::cuda {
// A named namespace, not an anonymous one: the launchers below are instantiated for other files,
// and nvcc names an anonymous namespace's kernels differently in its object and PTX builds then
// (scripts/check_launch_resources.py matches them by name).
namespace simple {

constexpr int kTile = kWarpSize;  // rows of the other side per shared-memory tile
constexpr int kWarps = 8;         // rows per block
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kCacheThreads = 256;

// Dynamic shared memory of the kernels at a head dimension; a kernel of kDims lanes' worth of
// dimensions declares that of head_dim 32 * kDims.
constexpr size_t forward_shared_bytes(int head_dim) {
    return (2 * size_t{kTile} * (head_dim + 1) + size_t{kWarps} * head_dim) * sizeof(float);
}
constexpr size_t query_shared_bytes(int head_dim) {
    return (2 * size_t{kTile} * (head_dim + 1) + 2 * size_t{kWarps} * head_dim) * sizeof(float);
}
constexpr size_t key_shared_bytes(int head_dim) {
    return (2 * size_t{kTile} * (head_dim + 2) + 2 * size_t{kWarps} * head_dim) * sizeof(float);
}

// The first key the query at `position` (row `row` of batch b's starts) sees: its document's start
// (0 without the document mask), and past the sliding window.
__device__ __forceinline__ int first_visible(const int* starts, int64_t b, int rows, int row, int position,
                                             int window) {
    const int start = starts == nullptr ? 0 : starts[b * rows + row];
    return window > 0 ? max(start, position - window + 1) : start;
}

template <typename T>
__device__ __forceinline__ float round_through(float value) {
    return to_float(from_float<T>(value));
}

// (x, y) of a RoPE pair rotated by the angle of (cosine, sine); rounded to T as if stored.
template <typename T>
__device__ __forceinline__ void rotate_pair(float& x, float& y, float cosine, float sine) {
    const float low = x * cosine - y * sine, high = y * cosine + x * sine;
    x = round_through<T>(low);
    y = round_through<T>(high);
}

// tile[j][d] (kTile rows, `pitch` floats apart) = rows first+j of `base` (rows `row_stride`
// apart), head_dim columns; rows at or past `count` are zero. With `rope`, row r is rotated at
// position r. The whole block loads.
template <typename T>
__device__ void load_tile(SharedPointer<float> tile, int pitch, const T* base, int64_t row_stride, int first,
                          int count, int head_dim, const float* rope) {
    if (rope == nullptr) {
        for (int e = threadIdx.x; e < kTile * head_dim; e += blockDim.x) {
            const int j = e / head_dim;
            const int d = e % head_dim;
            const int row = first + j;
            tile[j * pitch + d] = row < count ? to_float(base[int64_t{row} * row_stride + d]) : 0.f;
        }
        return;
    }
    const int half = head_dim / 2;
    for (int e = threadIdx.x; e < kTile * half; e += blockDim.x) {
        const int j = e / half;
        const int d = e % half;
        const int row = first + j;
        float x = 0.f, y = 0.f;
        if (row < count) {
            const T* source = base + int64_t{row} * row_stride;
            x = to_float(source[d]);
            y = to_float(source[d + half]);
            const float* angles = rope + int64_t{row} * head_dim;
            rotate_pair<T>(x, y, angles[d], angles[half + d]);
        }
        tile[j * pitch + d] = x;
        tile[j * pitch + d + half] = y;
    }
}

// One warp: row[d] = source[d] for d < head_dim, rotated at `position` with `rope`.
template <typename T>
__device__ void load_row(SharedPointer<float> row, const T* source, int head_dim, const float* rope,
                         int position) {
    if (rope == nullptr) {
        for (int d = threadIdx.x % kWarpSize; d < head_dim; d += kWarpSize) row[d] = to_float(source[d]);
        return;
    }
    const int half = head_dim / 2;
    const float* angles = rope + int64_t{position} * head_dim;
    for (int d = threadIdx.x % kWarpSize; d < half; d += kWarpSize) {
        float x = to_float(source[d]), y = to_float(source[d + half]);
        rotate_pair<T>(x, y, angles[d], angles[half + d]);
        row[d] = x;
        row[d + half] = y;
    }
}

// One warp stores the row it accumulated, lane l holding elements l, l + 32, ... of `values`: as
// is, or (with `rope`) rotated back at `position` through `stage`, a row of the warp's shared
// memory no lane reads any more.
template <typename T, int kDims>
__device__ void store_row(T* destination, const float (&values)[kDims], int head_dim, const float* rope,
                          int position, SharedPointer<float> stage) {
    const int lane = threadIdx.x % kWarpSize;
    if (rope == nullptr) {
#pragma unroll
        for (int i = 0; i < kDims; ++i) {
            const int d = lane + i * kWarpSize;
            if (d < head_dim) destination[d] = from_float<T>(values[i]);
        }
        return;
    }
    __syncwarp();  // every lane is done reading `stage`
#pragma unroll
    for (int i = 0; i < kDims; ++i) {
        const int d = lane + i * kWarpSize;
        if (d < head_dim) stage[d] = values[i];
    }
    __syncwarp();
    const int half = head_dim / 2;
    const float* angles = rope + int64_t{position} * head_dim;
    for (int d = lane; d < half; d += kWarpSize) {
        const float x = stage[d], y = stage[d + half], cosine = angles[d], sine = angles[half + d];
        destination[d] = from_float<T>(x * cosine + y * sine);
        destination[d + half] = from_float<T>(y * cosine - x * sine);
    }
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
    declare_launch_limits<kThreads, forward_shared_bytes(kDims * kWarpSize)>();
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
    const int block_start =
        first_visible(a.starts, b, a.queries, first_query, a.query_offset + first_query, a.window) / kTile *
        kTile;
    const int row_start = active ? first_visible(a.starts, b, a.queries, t, position, a.window) : 0;
    const T* k = a.k + b * a.kv_batch_stride + h / a.group * hd;
    const T* v = a.v + b * a.kv_batch_stride + h / a.group * hd;
    if (active)
        load_row(q_row, a.q + b * a.q_batch_stride + t * a.q_row_stride + h * hd, hd, a.q_rope, position);

    float running_max = -INFINITY;
    float running_sum = 0.f;
    float acc[kDims] = {};
    for (int first_key = block_start; first_key < key_count; first_key += kTile) {
        __syncthreads();  // the previous tile is consumed; q_row is visible to the warp
        load_tile(k_tile, pitch, k, a.kv_row_stride, first_key, key_count, hd, a.k_rope);
        load_tile(v_tile, pitch, v, a.kv_row_stride, first_key, key_count, hd, nullptr);
        __syncthreads();
        if (!active || first_key > position || first_key + kTile <= row_start) continue;
        const bool visible = first_key + lane <= position && first_key + lane >= row_start;
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
    declare_launch_limits<kThreads, query_shared_bytes(kDims * kWarpSize)>();
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
    const int block_start =
        first_visible(a.starts, b, a.T_len, first_query, first_query, a.window) / kTile * kTile;
    const int row_start = active ? first_visible(a.starts, b, a.T_len, t, t, a.window) : 0;
    const int64_t row_stride = a.row_stride;
    const T* rows = a.qkv + int64_t{b} * a.T_len * row_stride;
    const T* q = rows + h * hd;
    const T* k = rows + a.q_width + h / a.group * hd;
    const T* v = k + a.kv_width;
    const int64_t stat = (int64_t{b} * a.heads + h) * a.T_len + t;
    const float lse = active ? a.lse[stat] : 0.f;
    if (active) {
        load_row(q_row, q + t * row_stride, hd, a.rope, t);
        load_row(dout_row, a.dout + (int64_t{b} * a.T_len + t) * a.q_width + h * hd, hd, nullptr, 0);
    }

    // Lane's key of the tile: P and dP (0 when the key is not visible).
    const auto probability_terms = [&](int first_key, float& p, float& dp) {
        p = dp = 0.f;
        if (first_key + lane > t || first_key + lane < row_start) return;
        p = expf(dot(q_row, k_tile + lane * pitch, hd) * a.scale - lse);
        dp = dot(dout_row, v_tile + lane * pitch, hd);
    };

    float delta_part = 0.f;
    for (int first_key = block_start; first_key < key_count; first_key += kTile) {
        __syncthreads();
        load_tile(k_tile, pitch, k, row_stride, first_key, key_count, hd, a.rope);
        load_tile(v_tile, pitch, v, row_stride, first_key, key_count, hd, nullptr);
        __syncthreads();
        if (!active || first_key > t) continue;
        float p, dp;
        probability_terms(first_key, p, dp);
        delta_part += p * dp;
    }
    const float delta = warp_sum(delta_part);

    float dq[kDims] = {};
    for (int first_key = block_start; first_key < key_count; first_key += kTile) {
        __syncthreads();
        load_tile(k_tile, pitch, k, row_stride, first_key, key_count, hd, a.rope);
        load_tile(v_tile, pitch, v, row_stride, first_key, key_count, hd, nullptr);
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
    store_row<T>(a.dqkv + (int64_t{b} * a.T_len + t) * row_stride + h * hd, dq, hd, a.rope, t, q_row);
    if (lane == 0) a.delta[stat] = delta;
}

// Key side of the backward: the k and v parts of dqkv. Grid (B*Hkv, ceil(T / kWarps)); warp w of
// block (x, y) handles key y*kWarps + w of key/value head x % Hkv, walking queries from
// y*kWarps on, for each query head of the group in turn.
template <typename T, int kDims>
__global__ void attention_backward_key_kernel(BackwardArgs<T> a) {
    declare_launch_limits<kThreads, key_shared_bytes(kDims * kWarpSize)>();
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

    const int kv_heads = a.heads / a.group;
    const int b = blockIdx.x / kv_heads;
    const int g = blockIdx.x % kv_heads;
    const int first_key = blockIdx.y * kWarps;
    const int s = first_key + warp;
    const bool active = s < a.T_len;
    const int64_t row_stride = a.row_stride;
    const T* rows = a.qkv + int64_t{b} * a.T_len * row_stride;
    const T* k = rows + a.q_width + g * hd;
    const T* v = k + a.kv_width;
    // Queries [s, key_end) see key s (its document's end, and within the window); those past the
    // block's last key's see none.
    const auto last_query = [&](int key) {
        const int end = a.ends == nullptr ? a.T_len : a.ends[int64_t{b} * a.T_len + key];
        return a.window > 0 ? min(end, key + a.window) : end;
    };
    const int query_end = last_query(min(first_key + kWarps, a.T_len) - 1);
    const int key_end = active ? last_query(s) : 0;
    if (active) {
        load_row(k_row, k + s * row_stride, hd, a.rope, s);
        load_row(v_row, v + s * row_stride, hd, nullptr, 0);
    }

    float dk[kDims] = {};
    float dv[kDims] = {};
    for (int h = g * a.group; h < (g + 1) * a.group; ++h) {
        const T* q = rows + h * hd;
        const T* dout = a.dout + int64_t{b} * a.T_len * a.q_width + h * hd;
        const int64_t stats = (int64_t{b} * a.heads + h) * a.T_len;
        for (int first_query = first_key; first_query < query_end; first_query += kTile) {
            __syncthreads();
            load_tile(q_tile, pitch, q, row_stride, first_query, a.T_len, hd, a.rope);
            load_tile(dout_tile, pitch, dout, a.q_width, first_query, a.T_len, hd, nullptr);
            if (threadIdx.x < kTile) {
                const int t = first_query + threadIdx.x;
                lse_tile[threadIdx.x] = t < a.T_len ? a.lse[stats + t] : 0.f;
                delta_tile[threadIdx.x] = t < a.T_len ? a.delta[stats + t] : 0.f;
            }
            __syncthreads();
            if (!active) continue;
            const int t = first_query + lane;
            float p = 0.f, ds = 0.f;
            if (t >= s && t < key_end) {
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
    }
    if (!active) return;
    T* dk_out = a.dqkv + (int64_t{b} * a.T_len + s) * row_stride + a.q_width + g * hd;
    store_row<T>(dk_out, dk, hd, a.rope, s, k_row);
    store_row<T>(dk_out + a.kv_width, dv, hd, nullptr, 0, v_row);
}

// k_cache, v_cache (B,maxT,Hkv·hd) rows [position, position+Tn) = the k (rotated with `rope` at
// its position, when not null) and v heads of qkv (B,Tn,row_stride). A thread per cache element;
// under RoPE the thread of element d < hd/2 of a head writes its pair d, d + hd/2.
template <typename T>
__global__ void write_cache_kernel(T* k_cache, T* v_cache, const T* qkv, int64_t rows, int Tn, int max_T,
                                   int64_t row_stride, int q_width, int kv_width, int head_dim, int position,
                                   const float* rope) {
    declare_launch_limits<kCacheThreads>();
    const int64_t index = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (index >= rows * kv_width) return;
    const int64_t row = index / kv_width;
    const int c = static_cast<int>(index % kv_width);
    const int64_t b = row / Tn;
    const int cache_position = position + static_cast<int>(row % Tn);
    const int64_t cache_row = b * max_T + cache_position;
    const T* k = qkv + row * row_stride + q_width;  // the row's key heads, then its value heads
    v_cache[cache_row * kv_width + c] = k[kv_width + c];
    if (rope == nullptr) {
        k_cache[cache_row * kv_width + c] = k[c];
        return;
    }
    const int half = head_dim / 2, d = c % head_dim;
    if (d >= half) return;
    float x = to_float(k[c]), y = to_float(k[c + half]);
    const float* angles = rope + int64_t{cache_position} * head_dim;
    rotate_pair<T>(x, y, angles[d], angles[half + d]);
    k_cache[cache_row * kv_width + c] = from_float<T>(x);
    k_cache[cache_row * kv_width + c + half] = from_float<T>(y);
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

}  // namespace simple

using namespace simple;

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
    const dim3 query_grid = attention_grid(batches, args.heads, args.T_len);
    const dim3 key_grid = attention_grid(batches, args.heads / args.group, args.T_len);
    dispatch_head_dim(args.head_dim, [&](auto dims) {
        launch_kernel(attention_backward_query_kernel<T, decltype(dims)::value>, query_grid, kThreads,
                      query_shared_bytes(args.head_dim), stream, args);
        launch_kernel(attention_backward_key_kernel<T, decltype(dims)::value>, key_grid, kThreads,
                      key_shared_bytes(args.head_dim), stream, args);
    });
}

template <typename T>
void launch_write_cache(cudaStream_t stream, T* k_cache, T* v_cache, const T* qkv, int64_t rows, int Tn,
                        int max_T, int64_t row_stride, int q_width, int kv_width, int head_dim, int position,
                        const float* rope) {
    launch_kernel(write_cache_kernel<T>, blocks_for(rows * kv_width, kCacheThreads), kCacheThreads, 0, stream,
                  k_cache, v_cache, qkv, rows, Tn, max_T, row_stride, q_width, kv_width, head_dim, position,
                  rope);
}

#define MIXGPT_SIMPLE_ATTENTION(T)                                                                       \
    template void launch_attention_forward<T>(cudaStream_t, const ForwardArgs<T>&, int64_t);             \
    template void launch_attention_backward<T>(cudaStream_t, const BackwardArgs<T>&, int64_t);           \
    template void launch_write_cache<T>(cudaStream_t, T*, T*, const T*, int64_t, int, int, int64_t, int, \
                                        int, int, int, const float*);
MIXGPT_SIMPLE_ATTENTION(float)
MIXGPT_SIMPLE_ATTENTION(__nv_bfloat16)
MIXGPT_SIMPLE_ATTENTION(__half)
#undef MIXGPT_SIMPLE_ATTENTION

}  // namespace mixgpt::cuda
