// What LtMatmulRunner::run (cublaslt_matmul.h) computes a product as when cuBLASLt offers no
// algorithm for it as asked: the routes, tried in order, and the kernels that complete them.
//
//   fp32_output       (products with a bias or a 16-bit D) the same operands into an fp32 D
//                     without the bias epilogue; a kernel then adds C and the bias and rounds to
//                     D's type once, in the order cuBLASLt's epilogue does.
//   widened_operands  (FP8, bf16 and fp16 operands, or TF32 compute) the operands converted
//                     exactly to a wider type (FP8 to bf16, bf16 and fp16 to fp32; TF32's
//                     rounded fp32 operands as they are) and multiplied with CUBLAS_COMPUTE_32F
//                     into fp32; the same kernel then applies the FP8 scales, C and the bias.
//
// Both keep fp32 accumulation, so a result differs from the product as asked only in how its
// sums are grouped. Unverified on a GPU: which combinations a real cuBLASLt refuses, and what
// these routes cost there.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/cuda/cublaslt_matmul.h"

namespace mixgpt::cuda {

// The fallback routes that apply to `product`, in the order to try them.
std::vector<LtRoute> fallback_routes(const LtProduct& product);
// "fp32 output with the epilogue in a kernel", "operands widened to bf16 (fp32 compute)", ...
std::string route_name(const LtProduct& product, LtRoute route);

// The device memory a fallback route needs beyond the product's own.
size_t fallback_bytes(const LtProduct& product, LtRoute route);

// The product cuBLASLt is asked for on a fallback route, placed in `scratch` (fallback_bytes of
// it, 256-byte aligned): its fp32 D first, then any widened operands.
LtProduct rerouted_product(const LtProduct& product, LtRoute route, void* scratch);

// Enqueues the conversions of `product`'s operands into `rerouted`'s, where they differ.
void widen_operands(const LtProduct& product, const LtProduct& rerouted, cudaStream_t stream);

// Enqueues what cuBLASLt's epilogue would have done to `rerouted`'s fp32 result, into
// `product`'s D: D = convert(factor · result [+ D] [+ bias]), factor = the FP8 scales where
// `rerouted` does not apply them, 1 otherwise.
void finish_product(const LtProduct& product, const LtProduct& rerouted, cudaStream_t stream);

// "bf16 x bf16 -> bf16 with bias, m=40 n=37 k=24 (op TN, ld 24/24/40)", for one-line messages.
std::string describe_product(const LtProduct& product);

}  // namespace mixgpt::cuda
