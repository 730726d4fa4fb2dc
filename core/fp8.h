// FP8 storage formats (OCP 8-bit Floating Point Specification, OFP8, v1.0) and exact conversions
// between them and fp32, on the host and, compiled by nvcc, on the device.
//
//   E4M3 ("fn"): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinities; the only NaN
//                patterns are S.1111.111 (0x7f, 0xff). Largest finite 448 (S.1111.110), smallest
//                normal 2^-6, smallest subnormal 2^-9.
//   E5M2:        1 sign, 5 exponent bits (bias 15), 2 mantissa bits; infinities S.11111.00 and
//                NaNs S.11111.{01,10,11} as in IEEE 754. Largest finite 57344 (S.11110.11),
//                smallest normal 2^-14, smallest subnormal 2^-16.
//
// fp32 -> FP8 is the saturating conversion the GPU's `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32`
// performs (PTX ISA, cvt: ".satfinite: ... if the input value is NaN, then the result is NaN in the
// specified destination format. If the absolute value of input (ignoring sign) is greater than
// MAX_NORM of the specified destination format, then the result is sign-preserved MAX_NORM"):
//   - round to nearest, ties to even, with subnormal results, on the exact fp32 value;
//   - |x| above the largest finite value, infinities included, gives ±largest finite (±448,
//     ±57344): never infinity, and in E4M3 never the NaN pattern;
//   - the sign is kept, zero and results that round to zero included (-1e-30 gives 0x80);
//   - every NaN, whatever its sign and payload, gives the canonical NaN 0x7f (0.1111.111 in E4M3,
//     0.11111.11 in E5M2). The PTX ISA says only "NaN in the destination format"; 0x7f is what
//     NVIDIA's own software conversion returns (`__nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...)` in
//     cuda_fp8.hpp, the host path of cuda_fp8.h, which first replaces any NaN by 0x7fffffff, "Canonical
//     NaN"), and tests/test_fp8_conversions.cpp (AgreesWithNvidiasHostConversion) compares with that
//     function. Which NaN pattern a GPU writes is unverified; nothing in mixgpt depends on it.
// FP8 -> fp32 is exact (every FP8 value is an fp32 value); NaN gives a quiet NaN of the same sign.
//
// tests/test_fp8_conversions.cpp checks both directions against a reference written from the OCP
// specification's tables, fp32 -> FP8 over all 2^32 fp32 bit patterns.
//
// The scalar functions are branch-free (every case computed, the right one selected) so that the
// array loops of core/fp8.cpp vectorize, and they run unchanged in device code (nvcc) where the
// `cvt` instruction is missing (compute capability below 8.9) and on the CUDA simulator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#if defined(__CUDACC__)
#define MIXGPT_HOST_DEVICE __host__ __device__
#else
#define MIXGPT_HOST_DEVICE
#endif

namespace mixgpt {

enum class Fp8Format : uint8_t { e4m3, e5m2 };

const char* fp8_format_name(Fp8Format format);        // "e4m3", "e5m2"
Fp8Format parse_fp8_format(const std::string& name);  // throws Error on anything else

constexpr float kE4m3Max = 448.f;
constexpr float kE5m2Max = 57344.f;
constexpr uint8_t kE4m3MaxBits = 0x7e;
constexpr uint8_t kE5m2MaxBits = 0x7b;
constexpr uint8_t kFp8NanBits = 0x7f;  // what every NaN converts to, in both formats

MIXGPT_HOST_DEVICE constexpr float fp8_max(Fp8Format format) {
    return format == Fp8Format::e4m3 ? kE4m3Max : kE5m2Max;
}

namespace fp8_detail {

MIXGPT_HOST_DEVICE inline uint32_t bits_of(float value) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(value);
#else
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
#endif
}

MIXGPT_HOST_DEVICE inline float float_of(uint32_t bits) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(bits);
#else
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
#endif
}

// `condition ? if_true : if_false` as mask arithmetic, which the vectorizer takes.
MIXGPT_HOST_DEVICE inline uint32_t select(bool condition, uint32_t if_true, uint32_t if_false) {
    const uint32_t mask = 0u - static_cast<uint32_t>(condition);
    return (if_true & mask) | (if_false & ~mask);
}

}  // namespace fp8_detail

MIXGPT_HOST_DEVICE inline uint8_t float_to_e4m3_bits(float value) {
    using namespace fp8_detail;
    const uint32_t bits = bits_of(value);
    const uint32_t sign = (bits >> 24) & 0x80u;
    const uint32_t magnitude = bits & 0x7fffffffu;
    // Normal (|x| >= 2^-6): rebias the exponent (127 -> 7) and round the 20 dropped mantissa bits
    // to nearest even; a carry moves into the exponent. Past 448 (or after rounding to the 480
    // that E4M3 cannot hold) the largest finite value, 0x7e.
    const uint32_t normal = (magnitude - (120u << 23) + 0x7ffffu + ((magnitude >> 20) & 1u)) >> 20;
    const uint32_t saturated = select(normal > kE4m3MaxBits, kE4m3MaxBits, normal);
    // Subnormal (|x| < 2^-6): 2^14 has an ulp of 2^-9, E4M3's subnormal step, so the fp32 addition
    // rounds |x| to a multiple of 2^-9 (nearest even); the low bits are the code (8: 2^-6).
    const uint32_t subnormal = bits_of(float_of(magnitude) + 16384.f) - 0x46800000u;
    const uint32_t finite = sign | select(magnitude < 0x3c800000u, subnormal, saturated);
    return static_cast<uint8_t>(select(magnitude > 0x7f800000u, kFp8NanBits, finite));
}

MIXGPT_HOST_DEVICE inline uint8_t float_to_e5m2_bits(float value) {
    using namespace fp8_detail;
    const uint32_t bits = bits_of(value);
    const uint32_t sign = (bits >> 24) & 0x80u;
    const uint32_t magnitude = bits & 0x7fffffffu;
    // Normal (|x| >= 2^-14): rebias (127 -> 15), round the 21 dropped bits; past 57344 (or after
    // rounding to 65536, E5M2's infinity) the largest finite value, 0x7b.
    const uint32_t normal = (magnitude - (112u << 23) + 0xfffffu + ((magnitude >> 21) & 1u)) >> 21;
    const uint32_t saturated = select(normal > kE5m2MaxBits, kE5m2MaxBits, normal);
    // Subnormal (|x| < 2^-14): 128 has an ulp of 2^-16, E5M2's subnormal step.
    const uint32_t subnormal = bits_of(float_of(magnitude) + 128.f) - 0x43000000u;
    const uint32_t finite = sign | select(magnitude < 0x38800000u, subnormal, saturated);
    return static_cast<uint8_t>(select(magnitude > 0x7f800000u, kFp8NanBits, finite));
}

MIXGPT_HOST_DEVICE inline float e4m3_bits_to_float(uint8_t code) {
    using namespace fp8_detail;
    const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
    const uint32_t shifted = static_cast<uint32_t>(code & 0x7fu) << 20;  // exponent and mantissa
    const uint32_t normal = shifted + (120u << 23);
    // Exponent field 0: mantissa * 2^-9, as (2^-6 + mantissa * 2^-9) - 2^-6, exact.
    const uint32_t subnormal = bits_of(float_of(shifted + (121u << 23)) - float_of(121u << 23));
    const uint32_t finite = select((shifted & 0x07800000u) == 0, subnormal, normal);
    return float_of(sign | select((code & 0x7fu) == 0x7fu, 0x7fc00000u, finite));
}

MIXGPT_HOST_DEVICE inline float e5m2_bits_to_float(uint8_t code) {
    using namespace fp8_detail;
    const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
    const uint32_t shifted = static_cast<uint32_t>(code & 0x7fu) << 21;
    const uint32_t exponent = shifted & 0x0f800000u;
    const uint32_t normal = shifted + (112u << 23);
    // Infinity, or NaN made quiet (payload kept).
    const uint32_t special = (shifted + (224u << 23)) | select(shifted > 0x0f800000u, 0x00400000u, 0u);
    // Exponent field 0: mantissa * 2^-16, as (2^-14 + mantissa * 2^-16) - 2^-14.
    const uint32_t subnormal = bits_of(float_of(shifted + (113u << 23)) - float_of(113u << 23));
    const uint32_t finite = select(exponent == 0, subnormal, normal);
    return float_of(sign | select(exponent == 0x0f800000u, special, finite));
}

MIXGPT_HOST_DEVICE inline uint8_t float_to_fp8_bits(float value, Fp8Format format) {
    return format == Fp8Format::e4m3 ? float_to_e4m3_bits(value) : float_to_e5m2_bits(value);
}

MIXGPT_HOST_DEVICE inline float fp8_bits_to_float(uint8_t code, Fp8Format format) {
    return format == Fp8Format::e4m3 ? e4m3_bits_to_float(code) : e5m2_bits_to_float(code);
}

// ---- arrays (vectorized, compiled for AVX2 as well as the baseline) ----

// destination[i] = FP8 of source[i] (the saturating conversion above).
void convert_to_fp8(const float* source, uint8_t* destination, size_t count, Fp8Format format);
// destination[i] = source[i] as fp32 (exact).
void convert_from_fp8(const uint8_t* source, float* destination, size_t count, Fp8Format format);

// What a quantization saw: amax = max |x| over the source (NaN elements ignored, as CUDA's fmaxf
// ignores them; 0 for an empty or all-NaN source; infinity if any element is infinite), and the
// number of elements that saturated: |fl(x * scale)| > fp8_max(format) (infinities included,
// NaN not), those the conversion clipped to ±fp8_max.
struct Fp8QuantizeStats {
    float amax = 0.f;
    uint64_t saturated = 0;
};

// destination[i] = FP8 of fl(source[i] * scale) (one fp32 multiplication, then the conversion).
Fp8QuantizeStats quantize_to_fp8(const float* source, float scale, uint8_t* destination, size_t count,
                                 Fp8Format format);

}  // namespace mixgpt
