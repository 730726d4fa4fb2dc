// bf16 stochastic rounding of a working copy on the device (adamw_step, muon_update): the same hash
// as the CPU backend's (kernels/cpu/stochastic_rounding.h), so both round every element the same way.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace mixgpt::cuda {

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// bf16 of value rounded up with probability equal to the discarded fraction: 16 random
// bits from hash(seed, index) are added below the kept bits before truncation.
__device__ __forceinline__ __nv_bfloat16 stochastic_bf16(float value, uint64_t seed, int64_t index) {
    const uint32_t bits = __float_as_uint(value);
    if ((bits & 0x7f800000u) == 0x7f800000u) return __float2bfloat16_rn(value);
    const auto noise =
        static_cast<uint32_t>(splitmix64(seed ^ splitmix64(static_cast<uint64_t>(index))) & 0xffffu);
    return __ushort_as_bfloat16(static_cast<unsigned short>((bits + noise) >> 16));
}

}  // namespace mixgpt::cuda
