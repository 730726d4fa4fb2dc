// The simple attention kernels (attention_simple.cu): exact, tiled, for every dtype and head
// dimension up to kAttentionMaxHeadDim, and the KV-cached forward; what the flash kernels
// (flash_attention.h) and the fp32 products (attention_products.h) do not take. Nothing of size
// T×T is stored.
//
// Every kernel gives one warp to one row (a query, or in the key-side backward
// a key) and walks the other side in tiles of 32 rows staged in shared memory as
// fp32: lane j works on row j of the tile for the dot products, then the warp
// accumulates its output row, lane l holding head dimensions l, l+32, ...
// The forward keeps an online softmax (running max and sum) and writes the
// log-sum-exp. The backward recomputes the probabilities from it:
//   query side: delta_t = sum_s P_ts dP_ts, then dq_t = scale sum_s P_ts (dP_ts - delta_t) k_s
//   key side:   dk_s = scale sum_t P_ts (dP_ts - delta_t) q_t,  dv_s = sum_t P_ts dout_t
// with dP_ts = dout_t · v_s. All sums run in a fixed order: deterministic. The key side runs per
// key/value head, over its query heads in turn, so a key's dk and dv sum the group's heads.
// RoPE rotates q and k as they are staged (rounded to T, as the CPU backend rounds them), and the
// query- and key-side gradients are rotated back through the warp's shared row before they are
// stored. Under the document mask (AttentionParams::document_starts, _ends) a block's walk starts at
// the tile of its first row's document and ends with its last row's; keys of other documents are
// masked.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace mixgpt::cuda {

constexpr int kAttentionMaxHeadDim = 128;

// Where the forward reads q, k, v and writes out: one (b, head) slice each, rows
// `row_stride` apart, batches `batch_stride` apart; q head h at h * head_dim of q, its key and
// value head at (h / group) * head_dim of k and v.
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
    int heads, group, head_dim;
    float scale;
    const float* q_rope;  // RoPE table (kernels/rope_table.h): q rotated at its position; or null
    const float* k_rope;  // k rotated at its row (training); null when keys are rotated already (cache)
    // The document mask: query t of batch b sees keys from starts[b * queries + t] on; null: from 0.
    const int* starts;
    int window;  // the sliding window (AttentionParams::window): keys past query_offset + t - window; 0: none
};

// The training layout: qkv, dqkv (B,T,row_stride) with H query heads, Hkv key and value heads;
// out, dout (B,T,q_width); lse, delta (B,H,T).
template <typename T>
struct BackwardArgs {
    T* dqkv;
    const T* qkv;
    const T* dout;
    const float* lse;
    float* delta;
    int T_len, heads, group, head_dim;
    int64_t row_stride;  // (H + 2 Hkv) head_dim
    int q_width;         // H head_dim: out's row, where k heads start
    int kv_width;        // Hkv head_dim: from a k head to its v head
    float scale;
    const float* rope;  // RoPE table, or null
    // The document mask, (B,T) each (AttentionParams::document_starts, _ends), or null: causal only.
    const int* starts;
    const int* ends;
    int window;  // the sliding window (AttentionParams::window), 0: none
};

// Enqueue the forward over `batches` sequences, the backward (delta, then dq and dk, dv), and the
// cache write of attention_forward_cached: k_cache, v_cache (B,maxT,Hkv·hd) rows [position,
// position+Tn) = the k (rotated with `rope` at its position, when not null) and v heads of qkv
// (rows = B·Tn rows of row_stride). T: float, __nv_bfloat16 or __half.
template <typename T>
void launch_attention_forward(cudaStream_t stream, const ForwardArgs<T>& args, int64_t batches);
template <typename T>
void launch_attention_backward(cudaStream_t stream, const BackwardArgs<T>& args, int64_t batches);
template <typename T>
void launch_write_cache(cudaStream_t stream, T* k_cache, T* v_cache, const T* qkv, int64_t rows, int Tn,
                        int max_T, int64_t row_stride, int q_width, int kv_width, int head_dim, int position,
                        const float* rope);

}  // namespace mixgpt::cuda
