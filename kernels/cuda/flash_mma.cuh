// The sm_80+ instructions the flash attention kernels are built from, as inline PTX:
// asynchronous global->shared copies (cp.async), warp-wide fragment loads from shared
// memory (ldmatrix) and the tensor-core product mma.sync.m16n8k16 with bf16 or fp16
// inputs and fp32 accumulators.
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

#ifdef MIXGPT_CUDA_SIM
#include "tests/cuda_sim/async_copy.h"
#include "tests/cuda_sim/warp_matrix.h"
#endif

// Each instruction below has its simulator emulation beside it (MIXGPT_CUDA_SIM).
namespace mixgpt::cuda::flash {

#ifndef MIXGPT_CUDA_SIM
__device__ __forceinline__ uint32_t shared_address(const void* pointer) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}
#endif

// ---- cp.async: copies that land in shared memory while the threads go on ----

// 16 bytes from global to shared; with `valid` false the destination is zero-filled and
// nothing is read (the source must still be a mapped address).
__device__ __forceinline__ void copy_async_16(void* shared, const void* global, bool valid) {
#ifdef MIXGPT_CUDA_SIM
    cuda_sim::copy_async(shared, global, 16, valid);
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)), "l"(global),
                 "r"(valid ? 16 : 0)
                 : "memory");
#endif
}

// 4 bytes, likewise.
__device__ __forceinline__ void copy_async_4(void* shared, const void* global, bool valid) {
#ifdef MIXGPT_CUDA_SIM
    cuda_sim::copy_async(shared, global, 4, valid);
#else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(shared)), "l"(global),
                 "r"(valid ? 4 : 0)
                 : "memory");
#endif
}

// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void copy_async_commit() {
#ifdef MIXGPT_CUDA_SIM
    cuda_sim::copy_async_commit();
#else
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most `kPending` committed groups are still in flight (for this thread).
template <int kPending>
__device__ __forceinline__ void copy_async_wait() {
#ifdef MIXGPT_CUDA_SIM
    cuda_sim::copy_async_wait(kPending);
#else
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

// ---- ldmatrix: four 8x8 tiles of 16-bit elements; lanes 8i..8i+7 give the row addresses
// of tile i, and register i of lane l receives tile i's (row l/4, columns 2(l%4), +1), or with
// .trans its (rows 2(l%4), +1, column l/4).

__device__ __forceinline__ void load_matrix_x4(uint32_t (&r)[4], const void* shared) {
#ifdef MIXGPT_CUDA_SIM
    cuda_sim::load_matrix_x4<false>(r, shared);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(shared)));
#endif
}

__device__ __forceinline__ void load_matrix_x4_transposed(uint32_t (&r)[4], const void* shared) {
#ifdef MIXGPT_CUDA_SIM
    cuda_sim::load_matrix_x4<true>(r, shared);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(shared)));
#endif
}

// ---- mma.sync: c (16x8 fp32) += a (16x16) · b (16x8), inputs of type T ----
template <typename T>
__device__ __forceinline__ void mma_16x8x16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "bf16 or fp16 inputs");
#ifdef MIXGPT_CUDA_SIM
    cuda_sim::mma_16x8x16<T>(c, a, b0, b1);
#else
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, "
            "%9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
#endif
}

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
