// Storage types of tensors and exact host conversions between them.
//
// fp32, bf16 and fp16 are float formats; i32 (int32) is the storage of index tensors (tokens,
// targets) and has no float conversion: round_to_dtype, convert_to_float and convert_from_float
// throw Error for it.
//
// Conversions to 16-bit formats round to nearest, ties to even; NaN stays NaN
// (quiet), infinities and signed zeros are kept, subnormals are produced and
// read exactly. Overflow past the largest finite value becomes infinity, as
// IEEE round-to-nearest prescribes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/float16_bits.h"  // float_to_bf16_bits, bf16_bits_to_float, float_to_fp16_bits, fp16_bits_to_float

namespace mixgpt {

enum class DType : uint8_t { f32, bf16, f16, i32 };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);         // "fp32", "bf16", "fp16", "int32"
DType parse_dtype(const std::string& name);  // throws Error on an unknown name

// The value a tensor of `dtype` would hold after storing `value` (identity for f32).
// Throws Error for i32.
float round_to_dtype(float value, DType dtype);
// The same for `count` values in place, vectorized (what hot loops call instead of the scalar one).
void round_to_dtype(float* values, size_t count, DType dtype);

// Element-wise conversion of `count` values between float storage formats; throws Error for i32.
void convert_to_float(const void* source, DType source_dtype, float* destination, size_t count);
void convert_from_float(const float* source, void* destination, DType destination_dtype, size_t count);

}  // namespace mixgpt
