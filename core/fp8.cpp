#include "core/fp8.h"

#include "core/error.h"

namespace mixgpt {
namespace {

// The array loops, compiled for AVX2 as well as the baseline (the loader picks one), as in
// core/dtype.cpp: the branch-free scalar conversions vectorize with AVX2's variable shifts.
#define MIXGPT_AVX2_CLONES __attribute__((target_clones("avx2", "default")))

MIXGPT_AVX2_CLONES void float_to_e4m3_array(const float* source, uint8_t* destination, size_t count) {
    for (size_t i = 0; i < count; ++i) destination[i] = float_to_e4m3_bits(source[i]);
}

MIXGPT_AVX2_CLONES void float_to_e5m2_array(const float* source, uint8_t* destination, size_t count) {
    for (size_t i = 0; i < count; ++i) destination[i] = float_to_e5m2_bits(source[i]);
}

MIXGPT_AVX2_CLONES void e4m3_to_float_array(const uint8_t* source, float* destination, size_t count) {
    for (size_t i = 0; i < count; ++i) destination[i] = e4m3_bits_to_float(source[i]);
}

MIXGPT_AVX2_CLONES void e5m2_to_float_array(const uint8_t* source, float* destination, size_t count) {
    for (size_t i = 0; i < count; ++i) destination[i] = e5m2_bits_to_float(source[i]);
}

// One pass: the scaled conversion, amax (a comparison that is false for NaN, so NaN is skipped)
// and the saturation count. The uint32 count of one block cannot overflow (kBlock elements).
template <uint8_t (*Convert)(float)>
Fp8QuantizeStats quantize_block(const float* source, float scale, uint8_t* destination, size_t count,
                                float max_finite) {
    float amax = 0.f;
    uint32_t saturated = 0;
    for (size_t i = 0; i < count; ++i) {
        const float magnitude = source[i] < 0.f ? -source[i] : source[i];
        amax = magnitude > amax ? magnitude : amax;
        const float scaled = source[i] * scale;
        saturated += (scaled > max_finite) | (scaled < -max_finite);
        destination[i] = Convert(scaled);
    }
    return {amax, saturated};
}

MIXGPT_AVX2_CLONES Fp8QuantizeStats quantize_e4m3_block(const float* source, float scale,
                                                        uint8_t* destination, size_t count) {
    return quantize_block<float_to_e4m3_bits>(source, scale, destination, count, kE4m3Max);
}

MIXGPT_AVX2_CLONES Fp8QuantizeStats quantize_e5m2_block(const float* source, float scale,
                                                        uint8_t* destination, size_t count) {
    return quantize_block<float_to_e5m2_bits>(source, scale, destination, count, kE5m2Max);
}

constexpr size_t kBlock = size_t{1} << 20;

}  // namespace

const char* fp8_format_name(Fp8Format format) { return format == Fp8Format::e4m3 ? "e4m3" : "e5m2"; }

Fp8Format parse_fp8_format(const std::string& name) {
    if (name == "e4m3") return Fp8Format::e4m3;
    if (name == "e5m2") return Fp8Format::e5m2;
    throw Error("unknown FP8 format '" + name + "' (expected e4m3 or e5m2)");
}

void convert_to_fp8(const float* source, uint8_t* destination, size_t count, Fp8Format format) {
    if (format == Fp8Format::e4m3)
        float_to_e4m3_array(source, destination, count);
    else
        float_to_e5m2_array(source, destination, count);
}

void convert_from_fp8(const uint8_t* source, float* destination, size_t count, Fp8Format format) {
    if (format == Fp8Format::e4m3)
        e4m3_to_float_array(source, destination, count);
    else
        e5m2_to_float_array(source, destination, count);
}

Fp8QuantizeStats quantize_to_fp8(const float* source, float scale, uint8_t* destination, size_t count,
                                 Fp8Format format) {
    Fp8QuantizeStats total;
    for (size_t first = 0; first < count; first += kBlock) {
        const size_t n = count - first < kBlock ? count - first : kBlock;
        const Fp8QuantizeStats block =
            format == Fp8Format::e4m3 ? quantize_e4m3_block(source + first, scale, destination + first, n)
                                      : quantize_e5m2_block(source + first, scale, destination + first, n);
        total.amax = block.amax > total.amax ? block.amax : total.amax;
        total.saturated += block.saturated;
    }
    return total;
}

}  // namespace mixgpt
