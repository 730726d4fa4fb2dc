// Fused causal attention in the FlashAttention-2 manner, BF16/FP16 on tensor cores (sm_80+).
//
// Semantics are those of Backend::attention_forward / attention_backward (kernels/ops.def):
// qkv (B,T,(H+2Hkv)·hd) with query head h at columns h·hd, key head g at (H+g)·hd and value head
// g at (H+Hkv+g)·hd, query head h reading key/value head h / (H/Hkv) (grouped-query attention;
// H == Hkv is GPT-2's (B,T,3C)); causal; scale 1/sqrt(hd); optional RoPE; lse (B,H,T) fp32 the
// natural-log log-sum-exp of each query's scaled scores. Head dimensions 64 and 128, any T.
// Nothing of size T x T ever reaches device memory: the only extra memory is lse (forward) and
// D (B,H,T) fp32 (backward workspace); key/value heads are read where they are, never copied
// per query head.
//
// Design
// - Forward: one block per (query block, head, batch), query blocks longest-first. The Q tile
//   and double-buffered K/V tiles are staged in shared memory with cp.async (rows past T
//   zero-filled), fragments come from ldmatrix, products are mma.sync.m16n8k16 with fp32
//   accumulators. Each warp owns 16 query rows and keeps an online softmax: fp32 running
//   max and sum per row in the log2 domain (log2(e) folded into the scale, exp2). P is
//   rounded to the input type for P·V (as FlashAttention-2 does). Key tiles past the block's
//   last query are never loaded; a warp skips tiles wholly above its diagonal; only tiles
//   crossing the diagonal are masked.
// - Backward, deterministic (no atomics, bit-identical run to run), with S = Q K^T,
//   P = exp(scale S - lse), dP = dO V^T, D = rowsum(P ∘ dP), dS = P ∘ (dP - D):
//   1. D per (b, h, t): one block per query block walks the keys recomputing P and dP;
//   2. dK, dV: one block per (key block, key/value head, batch); each warp owns 16 keys and walks
//      the query tiles from its key block on (double-buffered Q, dO, lse, D) of each of the
//      head's H/Hkv query heads in turn, recomputing P^T and dS^T, accumulating dV += P^T dO and
//      dK += dS^T Q in registers: the group's sum in a fixed order, with no atomics;
//   3. dQ: one block per query block walks its keys again, accumulating dQ += dS K.
//   dQ, dK and dV are written once each, so dqkv needs no zeroing.
// - RoPE (flash_rope.cuh): q and k tiles are rotated in shared memory once they land, and dQ, dK
//   rotated back in registers before they are stored.
// - The document mask (AttentionParams::document_starts, _ends; both nondecreasing along T): a
//   query block starts at the key tile of its first query's document, and a key block's walk ends
//   at its last key's document end, so whole tiles outside every row's document are never loaded;
//   a warp skips the tiles none of its rows sees, and masks (P = 0) where a tile crosses a
//   document boundary. The bounds are read from memory where they are needed rather than held in
//   registers, which the kernels have none to spare of. A sliding window (AttentionParams::window)
//   folds into the same bounds (first key max(start, t - W + 1), last query min(end, u + W)), so
//   its tiles are skipped the same way.
// - Numerics against FlashAttention-2. FA2 takes D = rowsum(dO ∘ O) from the stored, rounded
//   O, and rounds dS to bf16/fp16 once for dS K and dS^T Q. Both errors reach dQ and dK,
//   most where dP ≈ D (a peaked softmax). bench/kernel_lab/flash_numerics.py emulates these
//   choices in numpy against float64, relative to fp32 arithmetic with low-precision storage
//   (the CPU backend, the yardstick of the project's 2x rule), worst over 40 seeds: FA2's dQ,
//   dK 3-21x (bf16) and 3-6x (fp16); D recomputed but dS rounded once, up to 2.2x. So step 1
//   recomputes D, and dS enters its two products as hi + lo parts (flash_tiles.cuh): dQ, dK
//   1.00x, dV up to 1.42x and out up to 1.41x (P rounded for P·V and P^T·dO, as in FA2).
//   The price is work: 11 tile products per backward (2 + 5 + 4) against FA2's 5.
// - Register tiles are sized so no kernel spills (checked by ptxas --warn-on-spills).
//   Shared memory stays under 99 KB per block (sm_86/89 opt-in limit).
//
// The launchers check shapes and dtypes (mixgpt::Error naming the tensor) and enqueue on
// `stream`; they allocate nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"
#include "kernels/ops.h"

namespace mixgpt::cuda {

// Whether the fused kernels handle this activation dtype and head dimension (bf16 or fp16;
// 64 or 128). attention.cu sends the others to the fp32 products or the simple kernels.
bool flash_attention_supported(DType dtype, int head_dim);

// out (B,T,H·hd) act; lse (B,H,T) f32; qkv (B,T,(H+2Hkv)·hd) act, act bf16 or fp16; all 16-byte
// aligned. rope: with params.rope_theta > 0 the (rows >= T, hd) f32 [cos | sin] table of
// kernels/rope_table.h in device memory, else invalid.
void flash_attention_forward(TensorView out, TensorView lse, TensorView qkv, const AttentionParams& params,
                             TensorView rope, cudaStream_t stream);

// Bytes of the backward's workspace D (B,H,T) fp32.
size_t flash_attention_backward_workspace_bytes(int64_t batch, int n_head, int64_t sequence_length);

// dqkv (B,T,(H+2Hkv)·hd) act (overwritten); dout (B,T,H·hd) act; qkv as the forward's; lse (B,H,T)
// f32 from the forward; delta (B,H,T) f32 workspace (contents ignored, overwritten with D); rope
// as the forward's.
void flash_attention_backward(TensorView dqkv, TensorView dout, TensorView qkv, TensorView lse,
                              TensorView delta, const AttentionParams& params, TensorView rope,
                              cudaStream_t stream);

}  // namespace mixgpt::cuda
