#include "core/dtype.h"

#include <cstring>

#include "core/error.h"

namespace mixgpt {
namespace {

uint32_t float_bits(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

float bits_float(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

[[noreturn]] void not_a_float_format(const char* function) {
    throw Error(std::string(function) + ": int32 is not a float format");
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

uint16_t float_to_bf16_bits(float value) {
    const uint32_t bits = float_bits(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
    // Round to nearest even on the 16 discarded bits; a carry into the exponent
    // correctly turns the largest values into infinity.
    const uint32_t rounding_bias = 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

float bf16_bits_to_float(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_fp16_bits(float value) {
    const uint32_t bits = float_bits(value);
    const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
    if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to Inf
    const int exponent = static_cast<int>(magnitude >> 23) - 127;
    if (exponent >= -14) {
        // Normal half: keep 10 mantissa bits, round the other 13 to nearest even.
        const uint32_t half_exponent = static_cast<uint32_t>(exponent + 15);
        const uint32_t mantissa = magnitude & 0x7fffffu;
        uint32_t result = (half_exponent << 10) | (mantissa >> 13);
        const uint32_t remainder = mantissa & 0x1fffu;
        if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
        return static_cast<uint16_t>(sign | result);
    }
    if (exponent < -25) return sign;  // below half the smallest subnormal: rounds to zero
    // Subnormal half: value = m * 2^-24 with the implicit bit made explicit.
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const int shift = -exponent - 1;  // 14..24: bits of the float mantissa to drop
    uint32_t result = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return static_cast<uint16_t>(sign | result);
}

float fp16_bits_to_float(uint16_t bits) {
    const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    const uint32_t exponent = (bits >> 10) & 0x1fu;
    const uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    // Zero or subnormal: exactly mantissa * 2^-24.
    const float magnitude = static_cast<float>(mantissa) * bits_float(0x33800000u);
    return sign ? -magnitude : magnitude;
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

void convert_to_float(const void* source, DType source_dtype, float* destination, size_t count) {
    if (source_dtype == DType::i32) not_a_float_format("convert_to_float");
    if (source_dtype == DType::f32) {
        if (source != destination) std::memmove(destination, source, count * sizeof(float));
        return;
    }
    const auto* bits = static_cast<const uint16_t*>(source);
    if (source_dtype == DType::bf16) {
        for (size_t i = 0; i < count; ++i) destination[i] = bf16_bits_to_float(bits[i]);
    } else {
        for (size_t i = 0; i < count; ++i) destination[i] = fp16_bits_to_float(bits[i]);
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
        for (size_t i = 0; i < count; ++i) bits[i] = float_to_bf16_bits(source[i]);
    } else {
        for (size_t i = 0; i < count; ++i) bits[i] = float_to_fp16_bits(source[i]);
    }
}

}  // namespace mixgpt
