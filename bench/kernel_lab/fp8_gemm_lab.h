// FP8 products beside BF16 ones at the linear layers of d12 (GPT-2 124M, C = 768) and d24
// (GPT-2 350M, C = 1024), B·T = 16K tokens: for each layer (QKV, attention projection, MLP up,
// MLP down) cuBLASLt's BF16 GEMM and its FP8 GEMM (E4M3 x E4M3, fp32 accumulation, bf16 out,
// kernels/cuda/cublaslt_matmul.h: run_fp8_gemm), the MLP-up input gradient as E5M2 x E4M3,
// and the FP8 quantization of a layer input with its transpose (kernels/cuda/fp8_cast.h).
// Each kernel is validated first at a small size: the FP8 product against the CPU's
// (kernels/cpu/fp8_matmul.h) and the BF16 product against float64, each at most twice as far
// from the float64 product of the same stored values as the CPU's result (for BF16, that product
// rounded to bf16); the quantization bit for bit against the CPU's. Then timed (CUDA events on
// the lab's stream, inputs rotated past twice the L2) and reported in TFLOP/s (2 M N K per
// product) against the BF16 GEMM ceiling (FP8's peak is twice BF16's) or, for the quantization,
// in GB/s against the copy. On a device below compute capability 8.9 only the BF16 rows run.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/kernel_lab/lab_context.h"
#include "bench/kernel_lab/lab_report.h"

namespace mixgpt::lab {

struct LinearShape {
    const char* model;  // "d12", "d24"
    const char* layer;  // "qkv", "attn_proj", "mlp_up", "mlp_down"
    int64_t M, N, K;    // out (M,N) = in (M,K) · weight (N,K)^T
};

// The shapes a run times: production ones, or small ones of the same structure (smoke).
std::vector<LinearShape> linear_shapes(LabSizes sizes);

std::vector<Row> fp8_gemm_rows(const LabContext& context);

}  // namespace mixgpt::lab
