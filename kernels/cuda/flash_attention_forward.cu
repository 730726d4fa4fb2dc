// Flash attention forward (design in flash_attention.h): one block per (query block, head,
// batch); each warp owns 16 query rows and walks the key tiles of the head's key/value head up to
// its diagonal with an online softmax, then writes out (B,T,H·hd) and lse (B,H,T). Under the
// document mask the block starts at the key tile of its first query's document, and a warp skips
// the tiles wholly before its own rows' documents.
#include <climits>

#include "core/log.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/flash_launch.cuh"
#include "kernels/cuda/flash_rope.cuh"
#include "kernels/cuda/flash_tiles.cuh"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace flash {
namespace {

template <int kHeadDim>
struct ForwardTiles {
    static constexpr int kWarps = kHeadDim == 64 ? 8 : 4;
    static constexpr int kThreads = kWarps * kWarpSize;
    static constexpr int kBlockM = kWarps * kWarpRows;  // queries per block
    // Keys per tile: 32 at head dim 128 keep K and V double-buffered in 52,224 B, so that 3 blocks
    // fit an SM of sm_80 (164 KiB) and 4 one of sm_90 (228 KiB); tiles of 64 took 87,040 B, 1 block.
    static constexpr int kBlockN = kHeadDim == 64 ? 64 : 32;
    static constexpr int kPitch = tile_pitch<kHeadDim>();
    // Q (kBlockM rows), then K and V double-buffered (kBlockN rows each), 2-byte elements.
    static constexpr size_t kSharedBytes = size_t{kBlockM + 4 * kBlockN} * kPitch * 2;
};

// s (16 queries from first_query, kN keys from first_key): -inf where the key comes after the query.
template <int kN>
__device__ __forceinline__ void mask_future_keys(float (&s)[kN / 8][4], int first_query, int first_key,
                                                 int lane) {
#pragma unroll
    for (int j = 0; j < kN / 8; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i)
            if (first_key + 8 * j + accumulator_column(lane, i) > first_query + accumulator_row(lane, i))
                s[j][i] = -INFINITY;
}

// s as above: -inf where the key lies before the first key of the row's document.
template <int kN, typename T>
__device__ __forceinline__ void mask_earlier_documents(float (&s)[kN / 8][4], const Params<T>& p, int batch,
                                                       int first_query, int first_key, int lane) {
    const int row_start[2] = {document_start(p, batch, first_query + accumulator_row(lane, 0)),
                              document_start(p, batch, first_query + accumulator_row(lane, 2))};
#pragma unroll
    for (int j = 0; j < kN / 8; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i)
            if (first_key + 8 * j + accumulator_column(lane, i) < row_start[i / 2]) s[j][i] = -INFINITY;
}

// One key tile of the online softmax for the lane's two rows: row_max (log2 domain) and
// row_sum (the lane's columns only) are updated, o is rescaled to the new max, and the scores
// s become the unnormalised probabilities exp2(s * scale_log2 - row_max).
template <int kN, int kHeadDim>
__device__ __forceinline__ void online_softmax(float (&s)[kN / 8][4], float (&row_max)[2],
                                               float (&row_sum)[2], float (&o)[kHeadDim / 8][4],
                                               float scale_log2) {
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < kN / 8; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) tile_max[i / 2] = fmaxf(tile_max[i / 2], s[j][i]);
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        // A row's columns are spread over the 4 lanes of a quad.
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(kFullMask, tile_max[r], 1));
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(kFullMask, tile_max[r], 2));
        const float new_max = fmaxf(row_max[r], tile_max[r] * scale_log2);
        base[r] = new_max == -INFINITY ? 0.f : new_max;  // no visible key yet: everything stays 0
        const float rescale = exp2f(row_max[r] - base[r]);
        row_max[r] = new_max;
        row_sum[r] *= rescale;
#pragma unroll
        for (int d = 0; d < kHeadDim / 8; ++d) {
            o[d][2 * r] *= rescale;
            o[d][2 * r + 1] *= rescale;
        }
    }
#pragma unroll
    for (int j = 0; j < kN / 8; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float p = exp2f(fmaf(s[j][i], scale_log2, -base[i / 2]));
            s[j][i] = p;
            row_sum[i / 2] += p;
        }
}

// Grid (ceil(T / kBlockM), H, B).
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(ForwardTiles<kHeadDim>::kThreads) forward_kernel(const Params<T> p) {
    using Tiles = ForwardTiles<kHeadDim>;
    declare_launch_limits<Tiles::kThreads, Tiles::kSharedBytes>();
    constexpr int kPitch = Tiles::kPitch, kBlockM = Tiles::kBlockM, kBlockN = Tiles::kBlockN;
    unsigned char* shared = dynamic_shared_address<unsigned char>();
    T* q_tile = reinterpret_cast<T*>(shared);     // (kBlockM, kPitch)
    T* k_tiles = q_tile + kBlockM * kPitch;       // 2 x (kBlockN, kPitch)
    T* v_tiles = k_tiles + 2 * kBlockN * kPitch;  // 2 x (kBlockN, kPitch)

    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int head = blockIdx.y, batch = blockIdx.z;
    const int length = p.length;
    const int first_query = (gridDim.x - 1 - blockIdx.x) * kBlockM;  // the longest blocks start first
    const int warp_query = first_query + warp * kWarpRows;
    const int64_t row_stride = p.row_stride;
    const T* rows = p.qkv + int64_t{batch} * length * row_stride;  // (T, (H+2Hkv)·hd)
    const T* q = rows + head * kHeadDim;                           // (T, hd), rows row_stride apart
    const T* k = rows + p.q_width + head / p.group * kHeadDim;
    const T* v = k + p.kv_width;
    const int key_tiles = (min(length, first_query + kBlockM) + kBlockN - 1) / kBlockN;
    // The block's first key tile: its first query's document's (0 under the causal mask alone).
    const int first_tile = document_start(p, batch, first_query) / kBlockN;

    const auto load_key_tile = [&](int tile) {
        const int buffer = tile % 2;
        load_rows_async<kBlockN, kHeadDim, Tiles::kThreads>(k_tiles + buffer * kBlockN * kPitch, k,
                                                            row_stride, tile * kBlockN, length);
        load_rows_async<kBlockN, kHeadDim, Tiles::kThreads>(v_tiles + buffer * kBlockN * kPitch, v,
                                                            row_stride, tile * kBlockN, length);
    };
    load_rows_async<kBlockM, kHeadDim, Tiles::kThreads>(q_tile, q, row_stride, first_query, length);
    load_key_tile(first_tile);
    copy_async_commit();

    T* warp_q = q_tile + warp * kWarpRows * kPitch;
    float o[kHeadDim / 8][4] = {};              // (16, hd) unnormalised output rows
    float row_max[2] = {-INFINITY, -INFINITY};  // per lane row, log2 domain
    float row_sum[2] = {0.f, 0.f};              // per lane row, the lane's columns
    for (int tile = first_tile; tile < key_tiles; ++tile) {
        if (tile + 1 < key_tiles) load_key_tile(tile + 1);  // into the buffer tile - 1 used
        copy_async_commit();
        copy_async_wait<1>();  // everything but the prefetch has landed
        __syncthreads();
        const int first_key = tile * kBlockN;
        const int buffer = tile % 2;
        if (p.rope != nullptr) {  // RoPE on the landed tiles (flash_rope.cuh): Q once, K per tile
            if (tile == first_tile)
                rotate_rows<kBlockM, kHeadDim, Tiles::kThreads>(q_tile, p.rope, first_query, length);
            rotate_rows<kBlockN, kHeadDim, Tiles::kThreads>(k_tiles + buffer * kBlockN * kPitch, p.rope,
                                                            first_key, length);
            __syncthreads();
        }
        // Some key of the tile is visible to some row of the warp (the warp's first row sees the
        // earliest keys).
        if (first_key < warp_query + kWarpRows &&
            first_key + kBlockN > document_start(p, batch, warp_query)) {
            float s[kBlockN / 8][4] = {};  // (16, kBlockN) scores q · k
            mma_rows_by_tile_t<T, kBlockN, kHeadDim, kPitch>(s, warp_q, k_tiles + buffer * kBlockN * kPitch,
                                                             lane);
            if (first_key + kBlockN - 1 > warp_query)
                mask_future_keys<kBlockN>(s, warp_query, first_key, lane);
            // Before the warp's last row's document: some row may see only part of the tile.
            if (p.document_starts != nullptr &&
                first_key < document_start(p, batch, warp_query + kWarpRows - 1))
                mask_earlier_documents<kBlockN>(s, p, batch, warp_query, first_key, lane);
            online_softmax<kBlockN, kHeadDim>(s, row_max, row_sum, o, p.scale_log2);
            mma_acc_by_tile<T, kHeadDim, kBlockN, kPitch>(o, s, v_tiles + buffer * kBlockN * kPitch, lane);
        }
        __syncthreads();  // the buffer is free for the prefetch two tiles on
    }

    float inverse[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        row_sum[r] += __shfl_xor_sync(kFullMask, row_sum[r], 1);
        row_sum[r] += __shfl_xor_sync(kFullMask, row_sum[r], 2);
        inverse[r] = 1.f / row_sum[r];
    }
    const int64_t out_offset = int64_t{batch} * length * p.q_width + head * kHeadDim;
    store_rows<T, kHeadDim>(o, inverse, warp_q, p.out + out_offset, p.q_width, warp_query, length, lane);
    if (lane % 4 == 0) {
        float* lse = p.lse + (int64_t{batch} * p.heads + head) * length;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int query = warp_query + accumulator_row(lane, 2 * r);
            if (query < length) lse[query] = (row_max[r] + log2f(row_sum[r])) * kLn2;
        }
    }
}

}  // namespace

Shape check_qkv(const char* op, const TensorView& qkv, const AttentionParams& params,
                const TensorView& rope) {
    expect_rank(op, "qkv", qkv, 3);
    const int64_t B = qkv.dim(0), T = qkv.dim(1), width = qkv.dim(2);
    const int H = params.n_head, Hkv = params.n_kv_head;
    MIXGPT_REQUIRE(H > 0 && Hkv > 0 && H % Hkv == 0,
                   format("cuda %s: n_kv_head %d does not divide n_head %d", op, Hkv, H));
    MIXGPT_REQUIRE(width % (H + 2 * int64_t{Hkv}) == 0,
                   format("cuda %s: qkv's last dimension %lld is not (n_head + 2 n_kv_head) * head_dim "
                          "(n_head %d, n_kv_head %d)",
                          op, static_cast<long long>(width), H, Hkv));
    const int64_t head_dim = width / (H + 2 * int64_t{Hkv});
    MIXGPT_REQUIRE(
        flash_attention_supported(qkv.dtype, static_cast<int>(head_dim)),
        format("cuda %s: %s with head_dim %lld is not supported (bf16 or fp16, head_dim 64 or 128)", op,
               dtype_name(qkv.dtype), static_cast<long long>(head_dim)));
    expect_tensor(op, "qkv", qkv, qkv.dtype, {B, T, width});
    MIXGPT_REQUIRE(B <= 65535 && H <= 65535 && T < (int64_t{1} << 30),
                   format("cuda %s: B = %lld, n_head = %d or T = %lld is past the launch limits", op,
                          static_cast<long long>(B), H, static_cast<long long>(T)));
    MIXGPT_REQUIRE(is_aligned(qkv.data, 16), format("cuda %s: qkv is not 16-byte aligned", op));
    MIXGPT_REQUIRE(rope.valid() == (params.rope_theta > 0.f),
                   format("cuda %s: the RoPE table is %s, but rope_theta is %g", op,
                          rope.valid() ? "given" : "missing", static_cast<double>(params.rope_theta)));
    if (rope.valid()) {
        expect_rank(op, "rope", rope, 2);
        MIXGPT_REQUIRE(
            rope.dtype == DType::f32 && rope.dim(0) >= T && rope.dim(1) == head_dim,
            format("cuda %s: the RoPE table is %s, expected (>= %lld, %lld) fp32", op,
                   rope.shape_string().c_str(), static_cast<long long>(T), static_cast<long long>(head_dim)));
    }
    return {static_cast<int>(B), static_cast<int>(T), H, Hkv, static_cast<int>(head_dim)};
}

}  // namespace flash

bool flash_attention_supported(DType dtype, int head_dim) {
    return (dtype == DType::bf16 || dtype == DType::f16) && (head_dim == 64 || head_dim == 128);
}

void flash_attention_forward(TensorView out, TensorView lse, TensorView qkv, const AttentionParams& params,
                             TensorView rope, cudaStream_t stream) {
    const char* op = "flash_attention_forward";
    const flash::Shape shape = flash::check_qkv(op, qkv, params, rope);
    const int64_t B = shape.batch, T = shape.length, H = shape.heads;
    expect_tensor(op, "out", out, qkv.dtype, {B, T, H * shape.head_dim});
    expect_tensor(op, "lse", lse, DType::f32, {B, H, T});
    MIXGPT_REQUIRE(is_aligned(out.data, 16), format("cuda %s: out is not 16-byte aligned", op));
    if (B * T == 0) return;
    flash::dispatch(qkv.dtype, shape.head_dim, [&](auto tag, auto head_dim) {
        using Element = decltype(tag);
        using Tiles = flash::ForwardTiles<decltype(head_dim)::value>;
        flash::Params<Element> arguments = flash::make_params<Element>(shape);
        arguments.qkv = qkv.as<const Element>();
        arguments.out = out.as<Element>();
        arguments.lse = lse.as<float>();
        arguments.rope = rope.valid() ? rope.as<const float>() : nullptr;
        flash::set_document_bounds(arguments, op, params, shape);
        const dim3 grid(blocks_for(T, Tiles::kBlockM), static_cast<unsigned>(H), static_cast<unsigned>(B));
        flash::launch(flash::forward_kernel<Element, decltype(head_dim)::value>, grid, Tiles::kThreads,
                      Tiles::kSharedBytes, stream, arguments);
    });
}

}  // namespace mixgpt::cuda
