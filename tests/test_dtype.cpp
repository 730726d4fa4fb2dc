// Exhaustive checks of the fp32 <-> bf16/fp16 conversions in core/dtype.h, over
// all 65,536 bit patterns of each 16-bit type, in both directions.
//
// References are independent of the code under test:
// - fp16: each value is rebuilt from its sign, exponent and mantissa fields in
//   double arithmetic, and a float is rounded by counting quanta of its binade in
//   double (std::nearbyint: IEEE round to nearest even). Where the compiler has
//   _Float16 (GCC 12 and newer on x86-64), whose conversions come from the
//   compiler/libgcc, that reference is itself checked against it; GCC 10 has none.
// - bf16: each value is rebuilt from its fields in double arithmetic; rounding is
//   checked at every value, at every midpoint between neighbours (which must go to
//   the even pattern) and one float ulp on each side of every midpoint.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace mixgpt {
namespace {

bool is_fp16_nan(uint16_t bits) { return (bits & 0x7c00u) == 0x7c00u && (bits & 0x03ffu) != 0; }

// Not for NaN patterns.
float fp16_reference_to_float(uint16_t bits) {
    const int sign = (bits >> 15) ? -1 : 1;
    const int exponent = (bits >> 10) & 0x1f;
    const int mantissa = bits & 0x3ff;
    if (exponent == 0x1f) return sign * INFINITY;
    if (exponent == 0) return static_cast<float>(sign * std::ldexp(mantissa / 1024.0, -14));
    return static_cast<float>(sign * std::ldexp(1.0 + mantissa / 1024.0, exponent - 15));
}

// Not for NaN. The nearest half, ties to the even pattern: |value| counted in quanta of its
// binade (2^-24 below 2^-14, the subnormals), rounded to an integer count; within a binade the
// pattern's last bit is the count's. From 65520 on (the midpoint past the largest half), infinity.
uint16_t fp16_reference_from_float(float value) {
    const uint16_t sign = std::signbit(value) ? 0x8000u : 0u;
    const double magnitude = std::fabs(static_cast<double>(value));
    if (magnitude >= 65520.0) return sign | 0x7c00u;
    int binade = 0;
    std::frexp(magnitude, &binade);  // magnitude in [2^(binade-1), 2^binade), for magnitude > 0
    const int quantum_exponent = magnitude < std::ldexp(1.0, -14) ? -24 : binade - 1 - 10;
    EXPECT_EQ(std::fegetround(), FE_TONEAREST);
    const auto quanta = static_cast<uint32_t>(std::nearbyint(std::ldexp(magnitude, -quantum_exponent)));
    if (quantum_exponent == -24) return static_cast<uint16_t>(sign | quanta);  // subnormal, or 2^-14 itself
    // quanta in [1024, 2048]; 2048 is the next binade's first pattern, which the sum gives too.
    return static_cast<uint16_t>(sign | (((quantum_exponent + 10 + 15) << 10) + (quanta - 1024)));
}
bool is_bf16_nan(uint16_t bits) { return (bits & 0x7f80u) == 0x7f80u && (bits & 0x007fu) != 0; }

double bf16_value_from_fields(uint16_t bits) {
    const int sign = (bits >> 15) ? -1 : 1;
    const int exponent = (bits >> 7) & 0xff;
    const int mantissa = bits & 0x7f;
    if (exponent == 0xff) return sign * INFINITY;
    if (exponent == 0) return sign * std::ldexp(mantissa / 128.0, -126);
    return sign * std::ldexp(1.0 + mantissa / 128.0, exponent - 127);
}

TEST(DType, Fp16ToFloatMatchesReferenceForEveryPattern) {
    for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
        const auto bits = static_cast<uint16_t>(pattern);
        const float got = fp16_bits_to_float(bits);
        const float want = fp16_reference_to_float(bits);
        if (is_fp16_nan(bits)) {
            ASSERT_TRUE(std::isnan(got)) << "pattern " << pattern;
        } else {
            ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
                << "pattern " << pattern << ": " << got << " vs " << want;
        }
    }
}

TEST(DType, FloatToFp16RoundsLikeReferenceAroundEveryPattern) {
    int checked = 0;
    for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
        const auto bits = static_cast<uint16_t>(pattern);
        if (is_fp16_nan(bits)) {
            ASSERT_TRUE(is_fp16_nan(float_to_fp16_bits(fp16_bits_to_float(bits)))) << "pattern " << pattern;
            continue;
        }
        const float value = fp16_reference_to_float(bits);
        ASSERT_EQ(float_to_fp16_bits(value), bits) << "exact value of pattern " << pattern;
        if (std::isinf(value) || (bits & 0x7fffu) == 0x7bffu) {
            // The largest finite half: its midpoint towards infinity is 65520.
            if (!std::isinf(value)) {
                const float midpoint = std::copysign(65520.0f, value);
                ASSERT_EQ(float_to_fp16_bits(midpoint), fp16_reference_from_float(midpoint));
                ASSERT_EQ(float_to_fp16_bits(std::nextafter(midpoint, 0.0f)), bits);
            }
            continue;
        }
        // Midpoint to the neighbour of larger magnitude, and one float ulp either side.
        const float neighbour = fp16_reference_to_float(static_cast<uint16_t>(bits + 1));
        const float midpoint = static_cast<float>((static_cast<double>(value) + neighbour) / 2);
        for (float probe : {midpoint, std::nextafter(midpoint, value), std::nextafter(midpoint, neighbour)}) {
            ASSERT_EQ(float_to_fp16_bits(probe), fp16_reference_from_float(probe))
                << "pattern " << pattern << " probe " << probe;
            ++checked;
        }
    }
    EXPECT_GT(checked, 3 * 60000);
}

// The fp16 reference above against the compiler's _Float16, where there is one: on every
// pattern, and rounding at every midpoint between neighbours and one float ulp either side.
TEST(DType, Fp16ReferenceAgreesWithCompilerFloat16) {
#ifdef __FLT16_MAX__
    const auto compiler_from_float = [](float value) {
        const _Float16 half = static_cast<_Float16>(value);
        uint16_t bits;
        std::memcpy(&bits, &half, sizeof bits);
        return bits;
    };
    for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
        const auto bits = static_cast<uint16_t>(pattern);
        if (is_fp16_nan(bits)) continue;
        _Float16 half;
        std::memcpy(&half, &bits, sizeof half);
        const float value = fp16_reference_to_float(bits);
        const float want = static_cast<float>(half);
        ASSERT_EQ(std::memcmp(&value, &want, sizeof value), 0) << "pattern " << pattern;
        const float neighbour = (bits & 0x7fffu) >= 0x7bffu ? std::copysign(65536.0f, value)
                                                             : fp16_reference_to_float(static_cast<uint16_t>(bits + 1));
        const float midpoint = static_cast<float>((static_cast<double>(value) + neighbour) / 2);
        for (float probe : {value, midpoint, std::nextafter(midpoint, value), std::nextafter(midpoint, neighbour)})
            ASSERT_EQ(fp16_reference_from_float(probe), compiler_from_float(probe))
                << "pattern " << pattern << " probe " << probe;
    }
#else
    GTEST_SKIP() << "this compiler has no _Float16 (GCC 10): the fp16 reference is checked where one has";
#endif
}

TEST(DType, Fp16HandlesSpecialValues) {
    EXPECT_TRUE(is_fp16_nan(float_to_fp16_bits(NAN)));
    EXPECT_EQ(float_to_fp16_bits(INFINITY), 0x7c00u);
    EXPECT_EQ(float_to_fp16_bits(-INFINITY), 0xfc00u);
    EXPECT_EQ(float_to_fp16_bits(1e6f), 0x7c00u);
    EXPECT_EQ(float_to_fp16_bits(-0.0f), 0x8000u);
    EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -24)), 0x0001u);  // smallest subnormal
    EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -25)), 0x0000u);  // tie below it: to even (zero)
}

TEST(DType, Bf16ToFloatMatchesFieldDecodingForEveryPattern) {
    for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
        const auto bits = static_cast<uint16_t>(pattern);
        const float got = bf16_bits_to_float(bits);
        if (is_bf16_nan(bits)) {
            ASSERT_TRUE(std::isnan(got)) << "pattern " << pattern;
            continue;
        }
        const double want = bf16_value_from_fields(bits);
        ASSERT_EQ(static_cast<double>(got), want) << "pattern " << pattern;
        ASSERT_EQ(std::signbit(got), (bits >> 15) != 0) << "pattern " << pattern;
    }
}

TEST(DType, FloatToBf16RoundsToNearestEvenAroundEveryPattern) {
    for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
        const auto bits = static_cast<uint16_t>(pattern);
        if (is_bf16_nan(bits)) {
            ASSERT_TRUE(is_bf16_nan(float_to_bf16_bits(bf16_bits_to_float(bits)))) << "pattern " << pattern;
            continue;
        }
        const double value = bf16_value_from_fields(bits);
        ASSERT_EQ(float_to_bf16_bits(static_cast<float>(value)), bits)
            << "exact value of pattern " << pattern;
        if (std::isinf(value)) continue;
        const auto next_bits = static_cast<uint16_t>(bits + 1);  // next larger magnitude (Inf after the max)
        const double neighbour = bf16_value_from_fields(next_bits);
        const double midpoint = std::isinf(neighbour)
                                    ? std::copysign(std::ldexp(2.0 - 1.0 / 256.0, 127), value)
                                    : (value + neighbour) / 2;
        const float midpoint_float = static_cast<float>(midpoint);
        ASSERT_EQ(static_cast<double>(midpoint_float), midpoint) << "midpoints are floats";
        const uint16_t even = (bits & 1u) == 0 ? bits : next_bits;
        ASSERT_EQ(float_to_bf16_bits(midpoint_float), even) << "tie at pattern " << pattern;
        ASSERT_EQ(float_to_bf16_bits(std::nextafter(midpoint_float, static_cast<float>(value))), bits)
            << "below midpoint of pattern " << pattern;
        ASSERT_EQ(float_to_bf16_bits(std::nextafter(midpoint_float, 2.0f * midpoint_float)), next_bits)
            << "above midpoint of pattern " << pattern;
    }
}

TEST(DType, ConvertRoundTripsArraysAndRoundToDtypeAgrees) {
    const float values[] = {0.1f, -3.14159f, 65504.f, 1e-7f, -0.0f, 12345.678f};
    for (DType dtype : {DType::bf16, DType::f16, DType::f32}) {
        uint16_t storage16[6];
        float storage32[6];
        void* storage = dtype == DType::f32 ? static_cast<void*>(storage32) : static_cast<void*>(storage16);
        convert_from_float(values, storage, dtype, 6);
        float back[6];
        convert_to_float(storage, dtype, back, 6);
        for (int i = 0; i < 6; ++i) EXPECT_EQ(back[i], round_to_dtype(values[i], dtype)) << dtype_name(dtype);
    }
}

// The array conversions are vectorized clones (AVX2 where the processor has it) of the scalar
// functions tested above: they must agree bit for bit, on every 16-bit pattern and on a sweep of
// float patterns with a stride prime to every power of two (all exponents, NaN payloads, both signs).
TEST(DType, ArrayConversionsMatchScalarOnesBitForBit) {
    std::vector<uint16_t> patterns(65536);
    for (uint32_t pattern = 0; pattern < 65536; ++pattern) patterns[pattern] = static_cast<uint16_t>(pattern);
    std::vector<float> floats(patterns.size());
    for (DType dtype : {DType::bf16, DType::f16}) {
        convert_to_float(patterns.data(), dtype, floats.data(), patterns.size());
        for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
            const auto bits = static_cast<uint16_t>(pattern);
            const float want = dtype == DType::bf16 ? bf16_bits_to_float(bits) : fp16_bits_to_float(bits);
            ASSERT_EQ(std::memcmp(&floats[pattern], &want, sizeof want), 0) << dtype_name(dtype) << " " << pattern;
        }
    }
    std::vector<float> sweep;
    for (uint64_t pattern = 0; pattern < (uint64_t{1} << 32); pattern += 65521) {
        const auto bits = static_cast<uint32_t>(pattern);
        float value;
        std::memcpy(&value, &bits, sizeof value);
        sweep.push_back(value);
    }
    std::vector<uint16_t> stored(sweep.size());
    for (DType dtype : {DType::bf16, DType::f16}) {
        convert_from_float(sweep.data(), stored.data(), dtype, sweep.size());
        for (size_t i = 0; i < sweep.size(); ++i) {
            const uint16_t want = dtype == DType::bf16 ? float_to_bf16_bits(sweep[i]) : float_to_fp16_bits(sweep[i]);
            ASSERT_EQ(stored[i], want) << dtype_name(dtype) << " at float pattern " << i * 65521;
        }
        std::vector<float> rounded = sweep;
        round_to_dtype(rounded.data(), rounded.size(), dtype);
        for (size_t i = 0; i < sweep.size(); ++i) {
            const float want = round_to_dtype(sweep[i], dtype);
            ASSERT_EQ(std::memcmp(&rounded[i], &want, sizeof want), 0)
                << "round_to_dtype " << dtype_name(dtype) << " at float pattern " << i * 65521;
        }
    }
}

TEST(DType, ParsesNamesAndRejectsUnknown) {
    EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
    EXPECT_EQ(parse_dtype("fp16"), DType::f16);
    EXPECT_EQ(parse_dtype("fp32"), DType::f32);
    EXPECT_EQ(parse_dtype("int32"), DType::i32);
    EXPECT_EQ(parse_dtype("i32"), DType::i32);
    EXPECT_THROW(parse_dtype("fp8"), Error);
    EXPECT_THROW(parse_dtype("int64"), Error);
    EXPECT_EQ(dtype_size(DType::bf16), 2u);
}

TEST(DType, Int32IsAnIndexTypeWithoutFloatConversions) {
    EXPECT_EQ(dtype_size(DType::i32), 4u);
    EXPECT_STREQ(dtype_name(DType::i32), "int32");
    EXPECT_THROW(round_to_dtype(1.f, DType::i32), Error);
    int32_t indices[2] = {3, 7};
    float values[2] = {0.f, 0.f};
    EXPECT_THROW(round_to_dtype(values, 2, DType::i32), Error);
    EXPECT_THROW(convert_to_float(indices, DType::i32, values, 2), Error);
    EXPECT_THROW(convert_from_float(values, indices, DType::i32, 2), Error);
    EXPECT_EQ(indices[0], 3);
    EXPECT_EQ(indices[1], 7);
}

}  // namespace
}  // namespace mixgpt
