// FP8 quantization of a tensor on the CPU: what kernels/cuda/fp8_cast.h does in one pass on the
// device, and its oracle there (bit for bit).
#pragma once

#include <cstdint>

#include "core/fp8.h"
#include "core/tensor.h"

namespace mixgpt::cpu {

// in (rows, cols) fp32/bf16/fp16, rows the product of its leading dimensions (a rank-1 tensor is
// one row). codes (rows, cols) = FP8 of fl(in · scale) (core/fp8.h's quantize_to_fp8, element by
// element); codes_transposed, unless null, (cols, rows) = the same codes transposed. Returns the
// amax of `in` and the count of elements that saturated. The same results for any thread count.
Fp8QuantizeStats quantize_fp8(const TensorView& in, float scale, Fp8Format format, uint8_t* codes,
                              uint8_t* codes_transposed);

}  // namespace mixgpt::cpu
