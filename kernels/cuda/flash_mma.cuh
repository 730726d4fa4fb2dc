// The mma.sync.m16n8k16 fragments the flash attention kernels are built from (the instructions
// themselves, with cp.async and ldmatrix: device_primitives.cuh), and the packing of their
// 16-bit inputs.
//
// Fragment layouts of mma.m16n8k16 (PTX ISA), lane = 4 * group + thread_in_group:
//   A (16x16, row-major), 4 registers of 2 elements: a0 = (group, 2t..2t+1),
//     a1 = (group+8, 2t..), a2 = (group, 8+2t..), a3 = (group+8, 8+2t..)
//   B (16x8, k x n), 2 registers: b0 = (k 2t..2t+1, n group), b1 = (k 8+2t.., n group)
//   C (16x8 fp32), 4 floats: c0,c1 = (group, 2t..2t+1), c2,c3 = (group+8, 2t..2t+1)
// where t = thread_in_group; a register holds its lower-indexed element in its low half.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace mixgpt::cuda::flash {

// Two floats rounded to T (nearest even) in one register, `low` in the low half.
template <typename T>
__device__ __forceinline__ uint32_t pack_pair(float low, float high) {
    uint32_t bits;
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
        memcpy(&bits, &pair, sizeof(bits));
    } else {
        const __half2 pair = __floats2half2_rn(low, high);
        memcpy(&bits, &pair, sizeof(bits));
    }
    return bits;
}

// The float a value of T holds after rounding `value` to T (nearest even).
template <typename T>
__device__ __forceinline__ float rounded(float value) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>)
        return __bfloat162float(__float2bfloat16_rn(value));
    else
        return __half2float(__float2half_rn(value));
}

}  // namespace mixgpt::cuda::flash
