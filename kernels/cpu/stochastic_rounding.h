// bf16 stochastic rounding of a working copy (adamw_step, muon_update): the same hash as the CUDA
// backend's (kernels/cuda/stochastic_rounding.cuh), so both round every element the same way.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace mixgpt::cpu {

inline uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// bf16 bits of `value` rounded stochastically: 16 random bits are added below the kept
// ones before truncation, so the expected stored value equals `value`. Element i of a
// step draws its bits from hash(seed, i), independent of threads.
inline uint16_t stochastic_bf16_bits(float value, uint64_t seed, int64_t i) {
    const uint32_t bits = float_bits(value);
    if ((bits & 0x7f800000u) == 0x7f800000u) return float_to_bf16_bits(value);
    const auto random =
        static_cast<uint32_t>(splitmix64(seed ^ splitmix64(static_cast<uint64_t>(i))) & 0xffffu);
    return static_cast<uint16_t>((bits + random) >> 16);
}

}  // namespace mixgpt::cpu
