// Flash attention backward (design in flash_attention.h), deterministic: D per query, then
// dK/dV per key block and key/value head (its query heads' contributions summed in head order)
// and dQ per query block, each written once, no atomics. Under the document mask a key block walks
// the query tiles of its keys' documents only, and a query block the key tiles of its queries'.
//
// With S = Q K^T (unscaled), P = exp(scale * S - lse), dP = dO V^T and dS = P ∘ (dP - D):
//   dV = P^T dO,   dK = scale · dS^T Q,   dQ = scale · dS K,   D = rowsum(P ∘ dP) = rowsum(dO ∘ O).
#include "core/log.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/flash_launch.cuh"
#include "kernels/cuda/flash_rope.cuh"
#include "kernels/cuda/flash_tiles.cuh"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace flash {
namespace {

// The dK/dV kernel: each warp owns 16 keys and walks query tiles of kBlockM.
template <int kHeadDim>
struct KeyTiles {
    static constexpr int kWarps = 4;
    static constexpr int kThreads = kWarps * kWarpSize;
    static constexpr int kBlockN = kWarps * kWarpRows;        // keys per block
    static constexpr int kBlockM = kHeadDim == 64 ? 64 : 32;  // queries per tile
    static constexpr int kPitch = tile_pitch<kHeadDim>();
    // K, V (kBlockN rows); Q, dO double-buffered (kBlockM rows); lse, D double-buffered (fp32).
    static constexpr size_t kSharedBytes =
        size_t{2 * kBlockN + 4 * kBlockM} * kPitch * 2 + size_t{4 * kBlockM} * sizeof(float);
};

// The dQ kernel: each warp owns 16 queries and walks key tiles of kBlockN.
template <int kHeadDim>
struct QueryTiles {
    static constexpr int kWarps = 4;
    static constexpr int kThreads = kWarps * kWarpSize;
    static constexpr int kBlockM = kWarps * kWarpRows;        // queries per block
    static constexpr int kBlockN = kHeadDim == 64 ? 64 : 32;  // keys per tile
    static constexpr int kPitch = tile_pitch<kHeadDim>();
    // Q, dO (kBlockM rows); K, V double-buffered (kBlockN rows); lse, D (fp32).
    static constexpr size_t kSharedBytes =
        size_t{2 * kBlockM + 4 * kBlockN} * kPitch * 2 + size_t{2 * kBlockM} * sizeof(float);
};

// Grid (ceil(T / kBlockN), Hkv, B): dK and dV of keys [first_key, first_key + kBlockN) of one
// key/value head, walking the query tiles of each of its query heads in turn.
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(KeyTiles<kHeadDim>::kThreads) key_kernel(const Params<T> p) {
    using Tiles = KeyTiles<kHeadDim>;
    declare_launch_limits<Tiles::kThreads, Tiles::kSharedBytes>();
    constexpr int kPitch = Tiles::kPitch, kBlockM = Tiles::kBlockM, kBlockN = Tiles::kBlockN;
    unsigned char* shared = dynamic_shared_address<unsigned char>();
    T* k_tile = reinterpret_cast<T*>(shared);                                        // (kBlockN, kPitch)
    T* v_tile = k_tile + kBlockN * kPitch;                                           // (kBlockN, kPitch)
    T* q_tiles = v_tile + kBlockN * kPitch;                                          // 2 x (kBlockM, kPitch)
    T* dout_tiles = q_tiles + 2 * kBlockM * kPitch;                                  // 2 x (kBlockM, kPitch)
    float* lse_tiles = reinterpret_cast<float*>(dout_tiles + 2 * kBlockM * kPitch);  // 2 x (kBlockM)
    float* delta_tiles = lse_tiles + 2 * kBlockM;                                    // 2 x (kBlockM)

    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int kv_head = blockIdx.y, batch = blockIdx.z;
    const int length = p.length;
    const int first_key = blockIdx.x * kBlockN;
    const int warp_key = first_key + warp * kWarpRows;
    const int64_t row_stride = p.row_stride;
    const T* rows = p.qkv + int64_t{batch} * length * row_stride;  // (T, (H+2Hkv)·hd)
    const T* k = rows + p.q_width + kv_head * kHeadDim;            // (T, hd), rows row_stride apart
    const T* v = k + p.kv_width;
    // Queries first_key .. the block's last key's document end - 1 see the block's keys (ends are
    // nondecreasing; T under the causal mask alone).
    const int query_tiles =
        (document_end(p, batch, first_key + kBlockN - 1) - first_key + kBlockM - 1) / kBlockM;
    const int steps = p.group * query_tiles;  // (query head of the group, query tile) pairs

    // Step `step`: query tile step % query_tiles of the group's query head step / query_tiles.
    const auto head_of = [&](int step) { return kv_head * p.group + step / query_tiles; };
    const auto load_query_tile = [&](int step) {
        const int buffer = step % 2, head = head_of(step), first = first_key + step % query_tiles * kBlockM;
        const T* q = rows + head * kHeadDim;
        const T* dout = p.dout + int64_t{batch} * length * p.q_width + head * kHeadDim;  // rows H·hd apart
        const int64_t stats = (int64_t{batch} * p.heads + head) * length;
        load_rows_async<kBlockM, kHeadDim, Tiles::kThreads>(q_tiles + buffer * kBlockM * kPitch, q,
                                                            row_stride, first, length);
        load_rows_async<kBlockM, kHeadDim, Tiles::kThreads>(dout_tiles + buffer * kBlockM * kPitch, dout,
                                                            p.q_width, first, length);
        load_values_async<kBlockM>(lse_tiles + buffer * kBlockM, p.lse + stats, first, length);
        load_values_async<kBlockM>(delta_tiles + buffer * kBlockM, p.delta + stats, first, length);
    };
    load_rows_async<kBlockN, kHeadDim, Tiles::kThreads>(k_tile, k, row_stride, first_key, length);
    load_rows_async<kBlockN, kHeadDim, Tiles::kThreads>(v_tile, v, row_stride, first_key, length);
    load_query_tile(0);
    copy_async_commit();

    T* warp_k = k_tile + warp * kWarpRows * kPitch;
    T* warp_v = v_tile + warp * kWarpRows * kPitch;
    float dk[kHeadDim / 8][4] = {};  // (16 keys, hd), unscaled
    float dv[kHeadDim / 8][4] = {};  // (16 keys, hd)
    for (int step = 0; step < steps; ++step) {
        if (step + 1 < steps) load_query_tile(step + 1);
        copy_async_commit();
        copy_async_wait<1>();
        __syncthreads();
        const int buffer = step % 2;
        const int first_query = first_key + step % query_tiles * kBlockM;
        T* q_tile = q_tiles + buffer * kBlockM * kPitch;
        if (p.rope != nullptr) {  // RoPE on the landed tiles (flash_rope.cuh): K once, Q per tile
            if (step == 0) rotate_rows<kBlockN, kHeadDim, Tiles::kThreads>(k_tile, p.rope, first_key, length);
            rotate_rows<kBlockM, kHeadDim, Tiles::kThreads>(q_tile, p.rope, first_query, length);
            __syncthreads();
        }
        // Some query of the tile sees some key of the warp (the warp's last key is seen the longest).
        if (first_query + kBlockM > warp_key &&
            first_query < document_end(p, batch, warp_key + kWarpRows - 1)) {
            const T* dout_tile = dout_tiles + buffer * kBlockM * kPitch;
            const SharedPointer<const float> lse_tile = shared_pointer(lse_tiles + buffer * kBlockM);
            const SharedPointer<const float> delta_tile = shared_pointer(delta_tiles + buffer * kBlockM);
            float pt[kBlockM / 8][4] = {};   // (16 keys, kBlockM queries): S^T, then P^T
            float dst[kBlockM / 8][4] = {};  // dP^T, then dS^T
            mma_rows_by_tile_t<T, kBlockM, kHeadDim, kPitch>(pt, warp_k, q_tile, lane);
            mma_rows_by_tile_t<T, kBlockM, kHeadDim, kPitch>(dst, warp_v, dout_tile, lane);
            // Masked: a query before a key of the warp, past its document (the warp's first key's
            // ends first), or rows past T.
            const bool masked = first_query < warp_key + kWarpRows - 1 || first_query + kBlockM > length ||
                                first_query + kBlockM > document_end(p, batch, warp_key);
            const int key_end[2] = {document_end(p, batch, warp_key + accumulator_row(lane, 0)),
                                    document_end(p, batch, warp_key + accumulator_row(lane, 2))};
#pragma unroll
            for (int j = 0; j < kBlockM / 8; ++j)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int column = 8 * j + accumulator_column(lane, i);
                    const int query = first_query + column, key = warp_key + accumulator_row(lane, i);
                    float probability = exp2f(fmaf(pt[j][i], p.scale_log2, -lse_tile[column] * kLog2e));
                    if (masked && (query < key || query >= key_end[i / 2])) probability = 0.f;
                    pt[j][i] = probability;
                    dst[j][i] = probability * (dst[j][i] - delta_tile[column]);
                }
            mma_acc_by_tile<T, kHeadDim, kBlockM, kPitch>(dv, pt, dout_tile, lane);
            mma_acc_by_tile<T, kHeadDim, kBlockM, kPitch, true>(dk, dst, q_tile, lane);
        }
        __syncthreads();
    }

    if (p.rope != nullptr) rotate_accumulator_back<kHeadDim>(dk, p.rope, warp_key, length, lane);
    const float key_scale[2] = {p.scale, p.scale}, value_scale[2] = {1.f, 1.f};
    T* dk_out = p.dqkv + int64_t{batch} * length * row_stride + p.q_width + kv_head * kHeadDim;
    store_rows<T, kHeadDim>(dk, key_scale, warp_k, dk_out, row_stride, warp_key, length, lane);
    store_rows<T, kHeadDim>(dv, value_scale, warp_v, dk_out + p.kv_width, row_stride, warp_key, length, lane);
}

// Grid (ceil(T / kBlockM), H, B), queries [first_query, first_query + kBlockM) walking their keys.
// kDeltaPass: delta = rowsum(P ∘ dP); else dQ, reading delta.
template <typename T, int kHeadDim, bool kDeltaPass>
__global__ void __launch_bounds__(QueryTiles<kHeadDim>::kThreads) query_kernel(const Params<T> p) {
    using Tiles = QueryTiles<kHeadDim>;
    declare_launch_limits<Tiles::kThreads, Tiles::kSharedBytes>();
    constexpr int kPitch = Tiles::kPitch, kBlockM = Tiles::kBlockM, kBlockN = Tiles::kBlockN;
    unsigned char* shared = dynamic_shared_address<unsigned char>();
    T* q_tile = reinterpret_cast<T*>(shared);                                    // (kBlockM, kPitch)
    T* dout_tile = q_tile + kBlockM * kPitch;                                    // (kBlockM, kPitch)
    T* k_tiles = dout_tile + kBlockM * kPitch;                                   // 2 x (kBlockN, kPitch)
    T* v_tiles = k_tiles + 2 * kBlockN * kPitch;                                 // 2 x (kBlockN, kPitch)
    float* lse_tile = reinterpret_cast<float*>(v_tiles + 2 * kBlockN * kPitch);  // (kBlockM)
    float* delta_tile = lse_tile + kBlockM;                                      // (kBlockM)

    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int head = blockIdx.y, batch = blockIdx.z;
    const int length = p.length;
    const int first_query = (gridDim.x - 1 - blockIdx.x) * kBlockM;  // the longest blocks start first
    const int warp_query = first_query + warp * kWarpRows;
    const int64_t row_stride = p.row_stride;
    const int64_t rows_offset = int64_t{batch} * length * row_stride;  // (T, (H+2Hkv)·hd) of the batch
    const T* q = p.qkv + rows_offset + head * kHeadDim;
    const T* k = p.qkv + rows_offset + p.q_width + head / p.group * kHeadDim;
    const T* v = k + p.kv_width;
    const T* dout = p.dout + int64_t{batch} * length * p.q_width + head * kHeadDim;
    const int64_t stats = (int64_t{batch} * p.heads + head) * length;
    const int key_tiles = (min(length, first_query + kBlockM) + kBlockN - 1) / kBlockN;
    // The block's first key tile, as in the forward (forward_kernel).
    const int first_tile = document_start(p, batch, first_query) / kBlockN;

    const auto load_key_tile = [&](int tile) {
        const int buffer = tile % 2;
        load_rows_async<kBlockN, kHeadDim, Tiles::kThreads>(k_tiles + buffer * kBlockN * kPitch, k,
                                                            row_stride, tile * kBlockN, length);
        load_rows_async<kBlockN, kHeadDim, Tiles::kThreads>(v_tiles + buffer * kBlockN * kPitch, v,
                                                            row_stride, tile * kBlockN, length);
    };
    load_rows_async<kBlockM, kHeadDim, Tiles::kThreads>(q_tile, q, row_stride, first_query, length);
    load_rows_async<kBlockM, kHeadDim, Tiles::kThreads>(dout_tile, dout, p.q_width, first_query, length);
    load_values_async<kBlockM>(lse_tile, p.lse + stats, first_query, length);
    if constexpr (!kDeltaPass) load_values_async<kBlockM>(delta_tile, p.delta + stats, first_query, length);
    load_key_tile(first_tile);
    copy_async_commit();

    T* warp_q = q_tile + warp * kWarpRows * kPitch;
    const T* warp_dout = dout_tile + warp * kWarpRows * kPitch;
    float dq[kHeadDim / 8][4] = {};            // (16 queries, hd), unscaled
    float row_lse[2] = {}, row_delta[2] = {};  // the lane's two rows (read at tile 0): lse in log2 domain, D
    float delta_sum[2] = {0.f, 0.f};           // delta pass: the lane's columns of rowsum(P ∘ dP)
    for (int tile = first_tile; tile < key_tiles; ++tile) {
        if (tile + 1 < key_tiles) load_key_tile(tile + 1);
        copy_async_commit();
        copy_async_wait<1>();
        __syncthreads();
        if (tile == first_tile)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int row = warp * kWarpRows + accumulator_row(lane, 2 * r);
                row_lse[r] = shared_pointer(lse_tile)[row] * kLog2e;
                row_delta[r] = kDeltaPass ? 0.f : shared_pointer(delta_tile)[row];
            }
        const int first_key = tile * kBlockN;
        const int buffer = tile % 2;
        T* k_tile = k_tiles + buffer * kBlockN * kPitch;
        if (p.rope != nullptr) {  // RoPE on the landed tiles (flash_rope.cuh): Q once, K per tile
            if (tile == first_tile)
                rotate_rows<kBlockM, kHeadDim, Tiles::kThreads>(q_tile, p.rope, first_query, length);
            rotate_rows<kBlockN, kHeadDim, Tiles::kThreads>(k_tile, p.rope, first_key, length);
            __syncthreads();
        }
        // Some key of the tile is visible to some row of the warp.
        if (first_key < warp_query + kWarpRows &&
            first_key + kBlockN > document_start(p, batch, warp_query)) {
            float ds[kBlockN / 8][4] = {};  // (16 queries, kBlockN keys): S, then dS
            float dp[kBlockN / 8][4] = {};  // dP
            mma_rows_by_tile_t<T, kBlockN, kHeadDim, kPitch>(ds, warp_q, k_tile, lane);
            mma_rows_by_tile_t<T, kBlockN, kHeadDim, kPitch>(dp, warp_dout,
                                                             v_tiles + buffer * kBlockN * kPitch, lane);
            // Crosses the diagonal, or reaches before a row's document.
            const bool masked = first_key + kBlockN - 1 > warp_query ||
                                first_key < document_start(p, batch, warp_query + kWarpRows - 1);
            const int row_start[2] = {document_start(p, batch, warp_query + accumulator_row(lane, 0)),
                                      document_start(p, batch, warp_query + accumulator_row(lane, 2))};
#pragma unroll
            for (int j = 0; j < kBlockN / 8; ++j)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    float probability = exp2f(fmaf(ds[j][i], p.scale_log2, -row_lse[i / 2]));
                    const int key = first_key + 8 * j + accumulator_column(lane, i);
                    if (masked && (key > warp_query + accumulator_row(lane, i) || key < row_start[i / 2]))
                        probability = 0.f;
                    if constexpr (kDeltaPass)
                        delta_sum[i / 2] += probability * dp[j][i];
                    else
                        ds[j][i] = probability * (dp[j][i] - row_delta[i / 2]);
                }
            if constexpr (!kDeltaPass)
                mma_acc_by_tile<T, kHeadDim, kBlockN, kPitch, true>(dq, ds, k_tile, lane);
        }
        __syncthreads();
    }

    if constexpr (kDeltaPass) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            delta_sum[r] += __shfl_xor_sync(kFullMask, delta_sum[r], 1);
            delta_sum[r] += __shfl_xor_sync(kFullMask, delta_sum[r], 2);
            const int query = warp_query + accumulator_row(lane, 2 * r);
            if (lane % 4 == 0 && query < length) p.delta[stats + query] = delta_sum[r];
        }
    } else {
        if (p.rope != nullptr) rotate_accumulator_back<kHeadDim>(dq, p.rope, warp_query, length, lane);
        const float query_scale[2] = {p.scale, p.scale};
        store_rows<T, kHeadDim>(dq, query_scale, warp_q, p.dqkv + rows_offset + head * kHeadDim, row_stride,
                                warp_query, length, lane);
    }
}

}  // namespace
}  // namespace flash

size_t flash_attention_backward_workspace_bytes(int64_t batch, int n_head, int64_t sequence_length) {
    return static_cast<size_t>(batch * n_head * sequence_length) * sizeof(float);
}

void flash_attention_backward(TensorView dqkv, TensorView dout, TensorView qkv, TensorView lse,
                              TensorView delta, const AttentionParams& params, TensorView rope,
                              cudaStream_t stream) {
    const char* op = "flash_attention_backward";
    const flash::Shape shape = flash::check_qkv(op, qkv, params, rope);
    const int64_t B = shape.batch, T = shape.length, H = shape.heads;
    const DType act = qkv.dtype;
    expect_tensor(op, "dqkv", dqkv, act, {B, T, qkv.dim(2)});
    expect_tensor(op, "dout", dout, act, {B, T, H * shape.head_dim});
    expect_tensor(op, "lse", lse, DType::f32, {B, H, T});
    expect_tensor(op, "delta", delta, DType::f32, {B, H, T});
    MIXGPT_REQUIRE(all_aligned_16({dqkv.data, dout.data}),
                   format("cuda %s: dqkv and dout must be 16-byte aligned", op));
    if (B * T == 0) return;
    flash::dispatch(act, shape.head_dim, [&](auto tag, auto head_dim) {
        using Element = decltype(tag);
        constexpr int kHeadDim = decltype(head_dim)::value;
        using KeyTiles = flash::KeyTiles<kHeadDim>;
        using QueryTiles = flash::QueryTiles<kHeadDim>;
        flash::Params<Element> arguments = flash::make_params<Element>(shape);
        arguments.qkv = qkv.as<const Element>();
        arguments.lse = lse.as<float>();
        arguments.dout = dout.as<const Element>();
        arguments.delta = delta.as<float>();
        arguments.dqkv = dqkv.as<Element>();
        arguments.rope = rope.valid() ? rope.as<const float>() : nullptr;
        flash::set_document_bounds(arguments, op, params, shape);
        const dim3 query_grid(blocks_for(T, QueryTiles::kBlockM), static_cast<unsigned>(H),
                              static_cast<unsigned>(B));
        flash::launch(flash::query_kernel<Element, kHeadDim, true>, query_grid, QueryTiles::kThreads,
                      QueryTiles::kSharedBytes, stream, arguments);
        const dim3 key_grid(blocks_for(T, KeyTiles::kBlockN), static_cast<unsigned>(shape.kv_heads),
                            static_cast<unsigned>(B));
        flash::launch(flash::key_kernel<Element, kHeadDim>, key_grid, KeyTiles::kThreads,
                      KeyTiles::kSharedBytes, stream, arguments);
        flash::launch(flash::query_kernel<Element, kHeadDim, false>, query_grid, QueryTiles::kThreads,
                      QueryTiles::kSharedBytes, stream, arguments);
    });
}

}  // namespace mixgpt::cuda
