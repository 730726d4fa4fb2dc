// The FP8 matrix product on the CPU: what cuBLASLt's FP8 GEMM computes, with a fixed, documented
// order of operations, so that it is the exact oracle of "quantise, multiply in FP32, scale".
//
//   out (M,N) = s · (A (M,K) · B (N,K)^T)  [+ out, when accumulate]  [+ bias (N)]
//
// Both operands are FP8 codes, row-major with K contiguous (A^T and B in cuBLASLt's column-major
// terms: its "TN" layout, the only one it runs FP8 in; kernels/cuda/README.md). Each element is
// computed, whatever the number of threads, as
//   1. a = decode(A[m,k]), b = decode(B[n,k]): exact fp32 values (core/fp8.h);
//   2. acc = 0; for k = 0, 1, ..., K-1: acc = fl32(acc + a·b). The product of two FP8 values is
//      exact in fp32 (at most 8 significant bits, exponents within fp32's range), so a fused
//      multiply-add gives the same bits as a multiply then an add;
//   3. s = fl32(a.scale_inverse · b.scale_inverse); v = fl32(acc · s);
//   4. accumulate: v = fl32(out[m,n] + v) (out as fp32); bias: v = fl32(v + bias[n]);
//   5. out[m,n] = v rounded to out's dtype (nearest even).
// Steps 3-4 are the epilogue of cuBLASLt's D = scale_A·scale_B·(A·B) + C, bias, in the order
// tests/cuda_sim/cublaslt.cpp applies them; a GPU's order inside the epilogue is not documented.
//
// Type combinations are cuBLASLt's FP8 table's (its cublasLtMatmul documentation): A and B E4M3 or
// E5M2 but not both E5M2; out bf16 with a bf16 bias, fp16 with an fp16 bias, or fp32 with a bf16
// bias. Anything else throws Error, as the GPU path refuses it.
#pragma once

#include <cstdint>

#include "core/fp8.h"
#include "core/tensor.h"

namespace mixgpt::cpu {

// An FP8 matrix (rows, cols), row-major, and the factor that takes its codes back to the values
// they stand for (value = decode(code) · scale_inverse).
struct Fp8Matrix {
    const uint8_t* codes = nullptr;  // (rows, cols)
    int64_t rows = 0, cols = 0;
    Fp8Format format = Fp8Format::e4m3;
    float scale_inverse = 1.f;
};

// out (M,N) bf16/fp16/fp32 [+]= s · (a (M,K) · b (N,K)^T) [+ bias (N)], as above; bias may be an
// invalid view (none). Throws Error naming the argument on a shape or type cuBLASLt would refuse.
void fp8_matmul(TensorView out, const Fp8Matrix& a, const Fp8Matrix& b, TensorView bias, bool accumulate);

}  // namespace mixgpt::cpu
