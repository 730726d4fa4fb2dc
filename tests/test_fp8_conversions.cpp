// The FP8 conversions of core/fp8.h against a reference written from the OCP 8-bit floating point
// specification (OFP8 v1.0), by a different method than the code under test:
//   - a code's value is computed from its sign, exponent and mantissa fields in double, with the
//     specification's special patterns (E4M3: S.1111.111 NaN, no infinity; E5M2: IEEE infinities
//     and NaNs);
//   - fp32 -> FP8 is "the representable value nearest to x, ties to the one with an even mantissa,
//     beyond the largest finite value the largest finite value, NaN to 0x7f" (cvt.rn.satfinite),
//     decided by exact comparison in double against the 127 non-negative finite values (for the
//     sweep, against the exact midpoints between neighbours, the same rule evaluated once per
//     interval instead of once per input).
// fp32 -> FP8 is checked over all 2^32 fp32 bit patterns for both formats, through the vectorized
// array function (what hot loops call); the scalar function is checked at every midpoint, one fp32
// ulp either side, and on a random sample. The sweep runs in parallel (OpenMP); on 2 cores it
// takes a few seconds (timed in the test's output).
// In CUDA builds the conversion is also compared with NVIDIA's own software conversion
// (cuda_fp8.h's host path, __nv_cvt_float_to_fp8 with __NV_SATFINITE) on every 251st pattern and
// around every rounding boundary: that is where NaN's result (0x7f) comes from.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/fp8.h"

#ifdef MIXGPT_WITH_CUDA
#include <cuda_fp8.h>
#endif

namespace mixgpt {
namespace {

struct FormatSpec {
    Fp8Format format;
    int exponent_bits, mantissa_bits, bias;
};
constexpr FormatSpec kE4m3{Fp8Format::e4m3, 4, 3, 7};
constexpr FormatSpec kE5m2{Fp8Format::e5m2, 5, 2, 15};

uint32_t bits_of(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

float float_of(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

// The value of `code` per the OCP specification, NaN for its NaN patterns.
double spec_value(const FormatSpec& spec, uint8_t code) {
    const double sign = (code & 0x80) ? -1.0 : 1.0;
    const int exponent = (code >> spec.mantissa_bits) & ((1 << spec.exponent_bits) - 1);
    const int mantissa = code & ((1 << spec.mantissa_bits) - 1);
    const int all_ones = (1 << spec.exponent_bits) - 1;
    const double fraction = std::ldexp(static_cast<double>(mantissa), -spec.mantissa_bits);
    if (spec.format == Fp8Format::e4m3 && exponent == all_ones && mantissa == (1 << spec.mantissa_bits) - 1)
        return NAN;
    if (spec.format == Fp8Format::e5m2 && exponent == all_ones) return mantissa == 0 ? sign * INFINITY : NAN;
    if (exponent == 0) return sign * std::ldexp(fraction, 1 - spec.bias);
    return sign * std::ldexp(1.0 + fraction, exponent - spec.bias);
}

// The non-negative finite values with their codes, sorted by value.
struct Representable {
    double value;
    uint8_t code;
};

std::vector<Representable> finite_non_negative(const FormatSpec& spec) {
    std::vector<Representable> values;
    for (int code = 0; code < 0x80; ++code) {
        const double value = spec_value(spec, static_cast<uint8_t>(code));
        if (std::isfinite(value)) values.push_back({value, static_cast<uint8_t>(code)});
    }
    std::sort(values.begin(), values.end(),
              [](const Representable& a, const Representable& b) { return a.value < b.value; });
    return values;
}

// The reference conversion, one input at a time: beyond the largest finite value (infinity
// included) that value; else the nearer of the two representable values around |x|, by exact
// comparison of the distances (both are exact in double: |x| lies between neighbours), a tie to
// the one with the even code.
uint8_t spec_encode(const std::vector<Representable>& values, float x) {
    if (std::isnan(x)) return kFp8NanBits;
    const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
    const double magnitude = std::fabs(static_cast<double>(x));
    if (magnitude >= values.back().value) return static_cast<uint8_t>(sign | values.back().code);
    size_t above = 1;
    while (values[above].value < magnitude) ++above;
    const Representable &low = values[above - 1], &high = values[above];
    const double to_low = magnitude - low.value, to_high = high.value - magnitude;
    const bool pick_high = to_high < to_low || (to_high == to_low && (high.code & 1) == 0);
    return static_cast<uint8_t>(sign | (pick_high ? high.code : low.code));
}

// The first fp32 bit pattern (of non-negative floats, ordered like their values) that the rule
// maps to each of values[1..]: every midpoint between neighbours is exact in fp32 (at most 5
// significant bits), and the midpoint itself goes to the neighbour with the even code.
std::vector<uint32_t> interval_starts(const std::vector<Representable>& values) {
    std::vector<uint32_t> starts(values.size(), 0);
    for (size_t i = 1; i < values.size(); ++i) {
        const double midpoint = (values[i - 1].value + values[i].value) / 2;
        const float midpoint_float = static_cast<float>(midpoint);
        EXPECT_EQ(static_cast<double>(midpoint_float), midpoint) << "midpoint not exact in fp32";
        starts[i] = bits_of(midpoint_float) + ((values[i].code & 1) == 0 ? 0u : 1u);
    }
    return starts;
}

const FormatSpec& spec_of(Fp8Format format) { return format == Fp8Format::e4m3 ? kE4m3 : kE5m2; }

class Fp8Conversion : public ::testing::TestWithParam<Fp8Format> {
protected:
    const FormatSpec& spec() const { return spec_of(GetParam()); }
};

TEST_P(Fp8Conversion, SpecificationTablesHaveTheDocumentedRange) {
    const std::vector<Representable> values = finite_non_negative(spec());
    const bool e4m3 = GetParam() == Fp8Format::e4m3;
    EXPECT_EQ(values.size(), e4m3 ? 127u : 124u);
    EXPECT_EQ(values.back().value, fp8_max(GetParam()));
    EXPECT_EQ(values.back().code, e4m3 ? kE4m3MaxBits : kE5m2MaxBits);
    EXPECT_EQ(values[1].value, std::ldexp(1.0, e4m3 ? -9 : -16));  // smallest subnormal
    for (size_t i = 1; i < values.size(); ++i) EXPECT_EQ(values[i].code, values[i - 1].code + 1);
}

TEST_P(Fp8Conversion, EveryCodeDecodesToItsSpecificationValue) {
    std::vector<uint8_t> codes(256);
    for (int code = 0; code < 256; ++code) codes[static_cast<size_t>(code)] = static_cast<uint8_t>(code);
    std::vector<float> decoded(256);
    convert_from_fp8(codes.data(), decoded.data(), codes.size(), GetParam());
    for (int code = 0; code < 256; ++code) {
        const double want = spec_value(spec(), static_cast<uint8_t>(code));
        const float scalar = fp8_bits_to_float(static_cast<uint8_t>(code), GetParam());
        for (const float got : {scalar, decoded[static_cast<size_t>(code)]}) {
            if (std::isnan(want)) {
                EXPECT_TRUE(std::isnan(got)) << "code " << code;
                EXPECT_EQ(std::signbit(got), (code & 0x80) != 0) << "code " << code;
                EXPECT_NE(bits_of(got) & 0x00400000u, 0u) << "code " << code << ": not a quiet NaN";
            } else {
                EXPECT_EQ(static_cast<double>(got), want) << "code " << code;
                EXPECT_EQ(std::signbit(got), (code & 0x80) != 0) << "code " << code;
            }
        }
    }
}

TEST_P(Fp8Conversion, EveryFiniteCodeRoundTrips) {
    for (int code = 0; code < 256; ++code) {
        const float value = fp8_bits_to_float(static_cast<uint8_t>(code), GetParam());
        if (!std::isfinite(value)) continue;
        EXPECT_EQ(float_to_fp8_bits(value, GetParam()), code) << "code " << code;
    }
}

TEST_P(Fp8Conversion, ScalarMatchesReferenceAtEveryMidpointAndAround) {
    const std::vector<Representable> values = finite_non_negative(spec());
    std::vector<float> inputs = {0.f, INFINITY, 1e-45f, 3.4e38f, 1e-30f};
    for (size_t i = 0; i < values.size(); ++i) {
        const auto value = static_cast<float>(values[i].value);
        inputs.push_back(value);
        if (i + 1 < values.size()) {
            const auto midpoint = static_cast<float>((values[i].value + values[i + 1].value) / 2);
            inputs.insert(inputs.end(),
                          {midpoint, std::nextafter(midpoint, 0.f), std::nextafter(midpoint, INFINITY)});
        }
    }
    // Past the largest finite value: its midpoint towards the next (absent) value, and beyond.
    const double top = values.back().value, step = top - values[values.size() - 2].value;
    for (const double x : {top + step / 2, top + step, top * 2, 1e30})
        inputs.insert(inputs.end(), {static_cast<float>(x), std::nextafter(static_cast<float>(x), 0.f)});
    std::mt19937 random(7);
    for (int i = 0; i < 100000; ++i) inputs.push_back(float_of(static_cast<uint32_t>(random())));
    for (const float magnitude : inputs)
        for (const float x : {magnitude, -magnitude})
            ASSERT_EQ(float_to_fp8_bits(x, GetParam()), spec_encode(values, x))
                << "x = " << x << " (bits 0x" << std::hex << bits_of(x) << ")";
}

TEST_P(Fp8Conversion, NaNGivesTheCanonicalNaNAndInfinitySaturates) {
    for (const uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffa00000u})
        EXPECT_EQ(float_to_fp8_bits(float_of(bits), GetParam()), kFp8NanBits) << std::hex << bits;
    const uint8_t max_bits = GetParam() == Fp8Format::e4m3 ? kE4m3MaxBits : kE5m2MaxBits;
    EXPECT_EQ(float_to_fp8_bits(INFINITY, GetParam()), max_bits);
    EXPECT_EQ(float_to_fp8_bits(-INFINITY, GetParam()), 0x80 | max_bits);
    EXPECT_EQ(float_to_fp8_bits(-0.f, GetParam()), 0x80);
    EXPECT_EQ(float_to_fp8_bits(-1e-30f, GetParam()), 0x80);
}

// Every fp32 bit pattern through convert_to_fp8, compared with the reference intervals.
TEST_P(Fp8Conversion, ArrayMatchesReferenceForAllFloatBitPatterns) {
    const std::vector<Representable> values = finite_non_negative(spec());
    const std::vector<uint32_t> starts = interval_starts(values);
    // The reference intervals themselves against the one-at-a-time rule, at each boundary.
    for (size_t i = 1; i < values.size(); ++i) {
        ASSERT_EQ(spec_encode(values, float_of(starts[i])), values[i].code) << "interval " << i;
        ASSERT_EQ(spec_encode(values, float_of(starts[i] - 1)), values[i - 1].code) << "interval " << i;
    }
    constexpr uint32_t kChunk = 1u << 16;
    constexpr int64_t kChunks = (int64_t{1} << 32) / kChunk;
    const Fp8Format format = GetParam();
    std::atomic<int64_t> mismatches{0};
    std::atomic<uint32_t> first_mismatch{0};
    const auto started = std::chrono::steady_clock::now();
#pragma omp parallel
    {
        std::vector<float> inputs(kChunk);
        std::vector<uint8_t> outputs(kChunk);
#pragma omp for schedule(dynamic, 64)
        for (int64_t chunk = 0; chunk < kChunks; ++chunk) {
            const auto first = static_cast<uint32_t>(chunk) * kChunk;
            for (uint32_t j = 0; j < kChunk; ++j) inputs[j] = float_of(first + j);
            convert_to_fp8(inputs.data(), outputs.data(), kChunk, format);
            // A chunk never straddles the sign bit; within it, magnitudes increase with the bits.
            const uint32_t sign_bits = first & 0x80000000u;
            const uint8_t sign = sign_bits != 0 ? 0x80 : 0x00;
            uint32_t j = 0;
            uint32_t wrong = 0;
            while (j < kChunk) {
                const uint32_t magnitude = (first + j) & 0x7fffffffu;
                uint32_t end = kChunk;  // the run of patterns that share one expected code
                uint8_t expected;
                if (magnitude > 0x7f800000u) {
                    expected = kFp8NanBits;
                } else {
                    const size_t interval =
                        static_cast<size_t>(std::upper_bound(starts.begin() + 1, starts.end(), magnitude) -
                                            starts.begin()) -
                        1;
                    expected = static_cast<uint8_t>(sign | values[interval].code);
                    uint32_t limit = 0x7f800001u;  // infinity saturates like the largest finite values
                    if (interval + 1 < starts.size()) limit = starts[interval + 1];
                    end = static_cast<uint32_t>(
                        std::min<uint64_t>(kChunk, uint64_t{limit} - (first & 0x7fffffffu)));
                }
                uint8_t differs = 0;
                for (uint32_t k = j; k < end; ++k) differs |= static_cast<uint8_t>(outputs[k] ^ expected);
                if (differs != 0) {
                    for (uint32_t k = j; k < end; ++k)
                        if (outputs[k] != expected && wrong++ == 0) first_mismatch = first + k;
                }
                j = end;
            }
            if (wrong != 0) mismatches += wrong;
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("fp8 %s: 2^32 fp32 patterns in %.2f s on %d threads\n", fp8_format_name(format), seconds,
                omp_get_max_threads());
    const float witness = float_of(first_mismatch.load());
    EXPECT_EQ(mismatches.load(), 0) << "first at bits 0x" << std::hex << first_mismatch.load() << " ("
                                    << witness << "): got 0x" << int{float_to_fp8_bits(witness, format)}
                                    << ", reference 0x" << int{spec_encode(values, witness)};
}

TEST_P(Fp8Conversion, QuantizeScalesOnceAndCountsWhatSaturates) {
    const Fp8Format format = GetParam();
    const float max = fp8_max(format);
    const float scale = 3.f;
    const std::vector<float> source = {1.f, -2.5f, max / 4.f, max / 2.f, -max, NAN, INFINITY, 1e-3f, 0.f};
    std::vector<uint8_t> quantized(source.size());
    const Fp8QuantizeStats stats =
        quantize_to_fp8(source.data(), scale, quantized.data(), source.size(), format);
    for (size_t i = 0; i < source.size(); ++i)
        EXPECT_EQ(quantized[i], float_to_fp8_bits(source[i] * scale, format)) << "element " << i;
    EXPECT_EQ(stats.amax, INFINITY);
    // max/2 * 3, -max * 3 and infinity exceed max; max/4 * 3 does not.
    EXPECT_EQ(stats.saturated, 3u);
    const std::vector<float> finite = {0.5f, -7.f, NAN, 2.f};
    const Fp8QuantizeStats finite_stats =
        quantize_to_fp8(finite.data(), 1.f, quantized.data(), finite.size(), format);
    EXPECT_EQ(finite_stats.amax, 7.f);  // NaN ignored
    EXPECT_EQ(finite_stats.saturated, 0u);
}

#ifdef MIXGPT_WITH_CUDA
TEST_P(Fp8Conversion, AgreesWithNvidiasHostConversion) {
    const __nv_fp8_interpretation_t kind = GetParam() == Fp8Format::e4m3 ? __NV_E4M3 : __NV_E5M2;
    const auto nvidia = [&](uint32_t bits) {
        return static_cast<uint8_t>(__nv_cvt_float_to_fp8(float_of(bits), __NV_SATFINITE, kind));
    };
    std::vector<uint32_t> patterns;
    for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 251) patterns.push_back(static_cast<uint32_t>(bits));
    for (const uint32_t start : interval_starts(finite_non_negative(spec())))
        for (const uint32_t sign : {0u, 0x80000000u})
            for (uint32_t offset = 0; offset < 4; ++offset) patterns.push_back((sign | start) + offset - 2);
    for (const uint32_t special :
         {0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0xff800000u, 0xffc00001u})
        patterns.push_back(special);
    int64_t mismatches = 0;
    uint32_t first = 0;
    for (const uint32_t bits : patterns)
        if (float_to_fp8_bits(float_of(bits), GetParam()) != nvidia(bits) && mismatches++ == 0) first = bits;
    EXPECT_EQ(mismatches, 0) << "of " << patterns.size() << "; first at bits 0x" << std::hex << first;
}
#endif

TEST(Fp8Format, NamesParseAndUnknownNamesAreRefused) {
    EXPECT_EQ(parse_fp8_format("e4m3"), Fp8Format::e4m3);
    EXPECT_EQ(parse_fp8_format(fp8_format_name(Fp8Format::e5m2)), Fp8Format::e5m2);
    EXPECT_THROW(parse_fp8_format("e3m4"), Error);
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8Conversion, ::testing::Values(Fp8Format::e4m3, Fp8Format::e5m2),
                         [](const ::testing::TestParamInfo<Fp8Format>& info) {
                             return std::string(fp8_format_name(info.param));
                         });

}  // namespace
}  // namespace mixgpt
