// FP8 test inputs shared by the CPU and the GPU tests of FP8 matrix products.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/fp8.h"

namespace mixgpt::test {

// Random finite codes (no NaN, no infinity), each value drawn uniformly among them.
inline std::vector<uint8_t> random_fp8_codes(size_t count, Fp8Format format, uint32_t seed) {
    std::mt19937 random(seed);
    std::vector<uint8_t> codes(count);
    for (uint8_t& code : codes) {
        do {
            code = static_cast<uint8_t>(random() & 0xff);
        } while (!std::isfinite(fp8_bits_to_float(code, format)));
    }
    return codes;
}

}  // namespace mixgpt::test
