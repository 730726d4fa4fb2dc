// Flash attention in the kernel lab: validated against the CPU backend, then timed at the
// GPT-2 124M shapes: 12 heads, B·T = 16K tokens, T in {512, 1024, 2048, 4096}, head
// dimensions 64 and 128 (C = 12 hd); and with Llama-style heads: 12 query heads sharing 4
// key/value heads, RoPE (theta 10000) on q and k, T = 2048; and under the document mask
// (--attention-mask document) with documents of 512 and of 128 tokens, and under a sliding window
// of 512 (--window), at T = 1024, 4096 and 8192 beside the causal mask at the same T, to see the
// time follow the tiles the mask leaves.
//
// FLOP convention (that of FlashAttention-2's benchmarks): the forward counts its two matrix
// products over the causal half of the score matrix, 4·B·H·T²·hd / 2; the backward counts
// five products, 2.5 times the forward. Work the kernels redo (the deterministic dQ pass
// recomputes two products) is not counted, nor RoPE's rotations; grouped key/value heads do not
// change the count (each query head's products are the same). Under the document mask the count
// is that of the pairs the mask leaves (each document's causal half), so the rate is comparable
// with the causal rows' when the kernels skip the masked tiles; under the window likewise (each
// query's min(t + 1, W) keys, about T·W − W²/2 pairs a sequence).
#pragma once

#include <vector>

#include "bench/kernel_lab/lab_context.h"
#include "bench/kernel_lab/lab_report.h"
#include "kernels/ops.h"

namespace mixgpt::lab {

struct AttentionShape {
    int batch, length, heads, head_dim;
    int kv_heads;             // == heads: multi-head attention (GPT-2)
    float rope_theta = 0.f;   // 0: no RoPE
    int document_length = 0;  // > 0: the document mask, documents of this many tokens (the last shorter)
    int window = 0;           // > 0: a sliding window of this many keys (one document a sequence)

    AttentionParams params() const { return {heads, kv_heads, rope_theta}; }
};

// The timed shapes, per head dimension 64 and 128. production: 12 heads, B·T = 16K, T in {512,
// 1024, 2048, 4096}; then 12 query heads on 4 key/value heads with RoPE at T = 2048. smoke: 2
// heads, B = 2, T in {64, 150} (a partial tile); then 4 query heads on 2 key/value heads with RoPE,
// B = 1, T = 150; then the document-mask shapes (production: documents of 512 and 128 at T = 1024,
// 4096, 8192, 12 heads, B·T = 16K; smoke: documents of 40 at T = 150), then the window shapes
// (production: a window of 512 at the same T; smoke: of 37 at T = 150). Only the lengths of
// `lengths` when it is not empty (the grouped shape only when its length is among them); a length
// the sizes do not have throws Error.
std::vector<AttentionShape> attention_shapes(LabSizes sizes, const std::vector<int>& lengths = {});

// Rows flash_attention_forward and flash_attention_backward per shape, named with " (GQA+RoPE)"
// for the grouped shapes, " (documents L)" under the document mask and " (window W)" under the
// window. Needs a bf16 or fp16 precision.
std::vector<Row> attention_rows(const LabContext& context);

}  // namespace mixgpt::lab
