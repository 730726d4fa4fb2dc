#include "core/dtype.h"

#include <cstring>

#include "core/error.h"

namespace mixgpt {
namespace {

[[noreturn]] void not_a_float_format(const char* function) {
    throw Error(std::string(function) + ": int32 is not a float format");
}

// The array loops, compiled for AVX2 as well as the baseline (the loader picks one): the
// branch-free conversions of core/float16_bits.h vectorize with AVX2's variable shifts and blends.
#define MIXGPT_AVX2_CLONES __attribute__((target_clones("avx2", "default")))

MIXGPT_AVX2_CLONES void bf16_to_float_array(const uint16_t* source, float* destination, size_t count) {
    for (size_t i = 0; i < count; ++i) destination[i] = bf16_bits_to_float(source[i]);
}

MIXGPT_AVX2_CLONES void fp16_to_float_array(const uint16_t* source, float* destination, size_t count) {
    for (size_t i = 0; i < count; ++i) destination[i] = fp16_bits_to_float(source[i]);
}

MIXGPT_AVX2_CLONES void float_to_bf16_array(const float* source, uint16_t* destination, size_t count) {
    for (size_t i = 0; i < count; ++i) destination[i] = float_to_bf16_bits(source[i]);
}

MIXGPT_AVX2_CLONES void float_to_fp16_array(const float* source, uint16_t* destination, size_t count) {
    for (size_t i = 0; i < count; ++i) destination[i] = float_to_fp16_bits(source[i]);
}

MIXGPT_AVX2_CLONES void round_to_bf16_array(float* values, size_t count) {
    for (size_t i = 0; i < count; ++i) values[i] = bf16_bits_to_float(float_to_bf16_bits(values[i]));
}

MIXGPT_AVX2_CLONES void round_to_fp16_array(float* values, size_t count) {
    for (size_t i = 0; i < count; ++i) values[i] = fp16_bits_to_float(float_to_fp16_bits(values[i]));
}

}  // namespace

size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return 4;
        case DType::bf16:
            return 2;
        case DType::f16:
            return 2;
        case DType::i32:
            return 4;
    }
    return 4;
}

const char* dtype_name(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return "fp32";
        case DType::bf16:
            return "bf16";
        case DType::f16:
            return "fp16";
        case DType::i32:
            return "int32";
    }
    return "unknown";
}

DType parse_dtype(const std::string& name) {
    if (name == "fp32" || name == "f32" || name == "float32") return DType::f32;
    if (name == "bf16" || name == "bfloat16") return DType::bf16;
    if (name == "fp16" || name == "f16" || name == "float16" || name == "half") return DType::f16;
    if (name == "int32" || name == "i32") return DType::i32;
    throw Error("unknown dtype '" + name + "' (expected fp32, bf16, fp16 or int32)");
}

float round_to_dtype(float value, DType dtype) {
    switch (dtype) {
        case DType::f32:
            return value;
        case DType::bf16:
            return bf16_bits_to_float(float_to_bf16_bits(value));
        case DType::f16:
            return fp16_bits_to_float(float_to_fp16_bits(value));
        case DType::i32:
            not_a_float_format("round_to_dtype");
    }
    return value;
}

void round_to_dtype(float* values, size_t count, DType dtype) {
    switch (dtype) {
        case DType::f32:
            return;
        case DType::bf16:
            return round_to_bf16_array(values, count);
        case DType::f16:
            return round_to_fp16_array(values, count);
        case DType::i32:
            not_a_float_format("round_to_dtype");
    }
}

void convert_to_float(const void* source, DType source_dtype, float* destination, size_t count) {
    if (source_dtype == DType::i32) not_a_float_format("convert_to_float");
    if (source_dtype == DType::f32) {
        if (source != destination) std::memmove(destination, source, count * sizeof(float));
        return;
    }
    const auto* bits = static_cast<const uint16_t*>(source);
    if (source_dtype == DType::bf16) {
        bf16_to_float_array(bits, destination, count);
    } else {
        fp16_to_float_array(bits, destination, count);
    }
}

void convert_from_float(const float* source, void* destination, DType destination_dtype, size_t count) {
    if (destination_dtype == DType::i32) not_a_float_format("convert_from_float");
    if (destination_dtype == DType::f32) {
        if (source != destination) std::memmove(destination, source, count * sizeof(float));
        return;
    }
    auto* bits = static_cast<uint16_t*>(destination);
    if (destination_dtype == DType::bf16) {
        float_to_bf16_array(source, bits, count);
    } else {
        float_to_fp16_array(source, bits, count);
    }
}

}  // namespace mixgpt
