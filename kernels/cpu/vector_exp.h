// exp(x) in float as straight-line arithmetic, so that loops over arrays vectorize (std::exp is a
// library call per element, which no loop containing it can vectorize; glibc's vector variants
// need -ffast-math). The range selects vectorize under -fno-trapping-math, which the Makefile
// sets. Cephes' expf: x = n ln 2 + r with |r| <= ln 2 / 2, e^r by a degree-7 polynomial, 2^n built
// in the exponent bits. tests/test_vector_exp.cpp holds it to 2 ulp of float64 exp on
// [-86.9, 88.72].
//
// Outside that range: x > ln(FLT_MAX) gives +inf; x <= -87 (e^x < 1.7e-38, about the smallest
// normal float) gives 0 where std::exp would give a subnormal. NaN stays NaN.
#pragma once

#include <cstdint>
#include <limits>

#include "core/float16_bits.h"  // float_bits, bits_float

namespace mixgpt::cpu {

inline float exp_vectorizable(float x) {
    constexpr float kLog2e = 1.44269504088896341f;
    constexpr float kLn2High = 0.693359375f;  // ln 2 = kLn2High + kLn2Low; n * kLn2High is exact
    constexpr float kLn2Low = -2.12194440e-4f;
    constexpr float kRoundMagic = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
    constexpr float kLargest = 88.7228394f;    // ln(FLT_MAX)
    constexpr float kSmallest = -87.f;
    const bool overflows = x > kLargest, underflows = x < kSmallest;  // both false for NaN
    const float clamped = x > 88.72f ? 88.72f : (underflows ? kSmallest : x);
    const float shifted = clamped * kLog2e + kRoundMagic;  // the integer n in its low mantissa bits
    const float n = shifted - kRoundMagic;
    const float r = (clamped - n * kLn2High) - n * kLn2Low;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.f;
    // 2^(n-1), then * 2: n reaches 128 near ln(FLT_MAX), whose 2^n alone is not a float. At
    // n = -126 (x near -87) the exponent field is 0 and the result 0.
    const uint32_t n_bits = float_bits(shifted) - float_bits(kRoundMagic);
    const float half_power = bits_float((n_bits + 126u) << 23);
    const float result = p * half_power * 2.f;
    const float infinity = std::numeric_limits<float>::infinity();
    const float bounded = overflows ? infinity : result;
    return underflows ? 0.f : bounded;
}

}  // namespace mixgpt::cpu
