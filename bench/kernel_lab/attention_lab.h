// Flash attention in the kernel lab: validated against the CPU backend, then timed at the
// GPT-2 124M shapes: 12 heads, B·T = 16K tokens, T in {512, 1024, 2048, 4096}, head
// dimensions 64 and 128 (C = 12 hd).
//
// FLOP convention (that of FlashAttention-2's benchmarks): the forward counts its two matrix
// products over the causal half of the score matrix, 4·B·H·T²·hd / 2; the backward counts
// five products, 2.5 times the forward. Work the kernels redo (the deterministic dQ pass
// recomputes two products) is not counted.
#pragma once

#include <vector>

#include "bench/kernel_lab/lab_context.h"
#include "bench/kernel_lab/lab_report.h"

namespace mixgpt::lab {

struct AttentionShape {
    int batch, length, heads, head_dim;
};

// The timed shapes. production: 12 heads, B·T = 16K, T in {512, 1024, 2048, 4096}, head
// dimensions 64 and 128. smoke: 2 heads, B = 2, T in {64, 150} (a partial tile). Only those of
// `lengths` when it is not empty; a length the sizes do not have throws Error.
std::vector<AttentionShape> attention_shapes(LabSizes sizes, const std::vector<int>& lengths = {});

// Rows flash_attention_forward and flash_attention_backward per shape. Needs a bf16 or fp16
// precision.
std::vector<Row> attention_rows(const LabContext& context);

}  // namespace mixgpt::lab
