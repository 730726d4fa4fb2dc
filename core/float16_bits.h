// fp32 <-> bf16/fp16 bit conversions, inline and branch-free so that loops over arrays vectorize
// (core/dtype.cpp compiles its array loops for AVX2 too): every case (NaN, infinity, overflow,
// normal, subnormal, zero) is computed and the right one selected. Round to nearest, ties to even;
// NaN becomes a quiet NaN of the same sign (bf16: the payload's top bits kept; fp16: 0x7e00).
// tests/test_dtype.cpp checks them against independent references over every 16-bit pattern.
#pragma once

#include <cstdint>
#include <cstring>

namespace mixgpt {

inline uint32_t float_bits(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

inline float bits_float(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

// `condition ? if_true : if_false` as mask arithmetic, which the vectorizer takes where a ?: chain
// would stay a branch.
inline uint32_t select_bits(bool condition, uint32_t if_true, uint32_t if_false) {
    const uint32_t mask = 0u - static_cast<uint32_t>(condition);
    return (if_true & mask) | (if_false & ~mask);
}

inline uint16_t float_to_bf16_bits(float value) {
    const uint32_t bits = float_bits(value);
    const uint32_t quiet_nan = (bits >> 16) | 0x0040u;
    // Nearest even on the 16 discarded bits; a carry into the exponent correctly turns the
    // largest values into infinity.
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    return static_cast<uint16_t>(select_bits((bits & 0x7fffffffu) > 0x7f800000u, quiet_nan, rounded));
}

inline float bf16_bits_to_float(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

inline uint16_t float_to_fp16_bits(float value) {
    const uint32_t bits = float_bits(value);
    const uint32_t sign = (bits >> 16) & 0x8000u;
    const uint32_t magnitude = bits & 0x7fffffffu;
    // At or past 65520 (0x47800000 is 2^16; the rounding below carries 65520 .. 2^16 to infinity).
    const uint32_t overflow = select_bits(magnitude > 0x7f800000u, 0x7e00u, 0x7c00u);
    // Below 2^-14, subnormal half: adding 0.5 aligns the float's mantissa so that the hardware's
    // nearest-even addition rounds it to a multiple of 2^-24; the low bits are the half's.
    const uint32_t subnormal = float_bits(bits_float(magnitude) + 0.5f) - 0x3f000000u;
    // Normal half: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits.
    const uint32_t normal = (magnitude - (112u << 23) + 0xfffu + ((magnitude >> 13) & 1u)) >> 13;
    const uint32_t finite = select_bits(magnitude < 0x38800000u, subnormal, normal);
    const uint32_t result = select_bits(magnitude >= 0x47800000u, overflow, finite);
    return static_cast<uint16_t>(sign | result);
}

inline float fp16_bits_to_float(uint16_t bits) {
    const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    const uint32_t shifted = static_cast<uint32_t>(bits & 0x7fffu) << 13;  // exponent and mantissa
    const uint32_t exponent = shifted & 0x0f800000u;
    const uint32_t normal = shifted + (112u << 23);
    const uint32_t special = shifted + (224u << 23);  // infinity or NaN, payload kept
    // Zero or subnormal: exactly mantissa * 2^-24, as (2^-14 + m * 2^-24) - 2^-14.
    const uint32_t subnormal = float_bits(bits_float(shifted + (113u << 23)) - bits_float(113u << 23));
    const uint32_t finite = select_bits(exponent == 0, subnormal, normal);
    const uint32_t magnitude = select_bits(exponent == 0x0f800000u, special, finite);
    return bits_float(sign | magnitude);
}

}  // namespace mixgpt
