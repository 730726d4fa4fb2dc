// The primitives of the kernels that only a GPU runs as written: shared memory, the launch
// itself (the <<<...>>> chevrons), the sm_80 instructions the flash attention kernels are
// built from, as inline PTX (cp.async, ldmatrix, mma.sync; their fragment layouts:
// flash_mma.cuh), and sm_89's FP8 conversion (cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32) the FP8
// quantization is built from. common.cuh includes this file under nvcc. The CUDA simulator's build
// (tests/cuda_sim/) does not: its force-included prelude defines these same names for the CPU
// (tests/cuda_sim/device_primitives.h), so the kernels hold no branch for it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/fp8.h"

namespace mixgpt::cuda {

// ---- shared memory ----
// Kernels read and write shared memory through SharedPointer<T>: here `T*`; on the simulator a
// pointer whose loads and stores it sees, to count their bank conflicts. shared_pointer(p) views
// a __shared__ array, or a raw address into shared memory, that way; ldmatrix and cp.async take
// raw addresses.
template <typename T>
using SharedPointer = T*;

template <typename T>
__device__ __forceinline__ T* shared_pointer(T* address) {
    return address;
}

// The block's dynamic shared memory (the launch's shared_bytes), 16-byte aligned.
template <typename T>
__device__ __forceinline__ T* dynamic_shared_memory() {
    extern __shared__ __align__(16) unsigned char dynamic_shared[];
    return reinterpret_cast<T*>(dynamic_shared);
}

// Its raw address, for ldmatrix and cp.async.
template <typename T>
__device__ __forceinline__ T* dynamic_shared_address() {
    return dynamic_shared_memory<T>();
}

// ---- the launch: kernel<<<grid, block, shared_bytes, stream>>>(arguments...) ----
template <typename... Parameters, typename... Arguments>
void enqueue_kernel(void (*kernel)(Parameters...), dim3 grid, dim3 block, size_t shared_bytes,
                    cudaStream_t stream, Arguments&&... arguments) {
    // clang-format 14 splits a launch's closing chevrons in .cuh files.
    // clang-format off
    kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Arguments>(arguments)...);
    // clang-format on
}

// ---- what a kernel's launches ask for at most: threads per block and dynamic shared memory ----
// Every kernel states them first thing, with the constants its launcher uses. Here they become a
// PTX comment (ptxas ignores it), which scripts/check_launch_resources.py reads beside ptxas'
// report of the kernel's registers and static shared memory; the simulator refuses a launch above
// them (tests/cuda_sim/device_primitives.h).
template <int kMaxThreads, size_t kMaxDynamicSharedBytes = 0>
__device__ __forceinline__ void declare_launch_limits() {
    asm volatile("// mixgpt launch limits: %0 threads, %1 bytes of dynamic shared memory" ::"n"(kMaxThreads),
                 "n"(kMaxDynamicSharedBytes));
}

__device__ __forceinline__ uint32_t shared_address(const void* pointer) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// ---- cp.async: copies that land in shared memory while the threads go on ----

// 16 bytes from global to shared; with `valid` false the destination is zero-filled and
// nothing is read (the source must still be a mapped address).
__device__ __forceinline__ void copy_async_16(void* shared, const void* global, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)), "l"(global),
                 "r"(valid ? 16 : 0)
                 : "memory");
}

// 4 bytes, likewise.
__device__ __forceinline__ void copy_async_4(void* shared, const void* global, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(shared)), "l"(global),
                 "r"(valid ? 4 : 0)
                 : "memory");
}

// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most `kPending` committed groups are still in flight (for this thread).
template <int kPending>
__device__ __forceinline__ void copy_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// ---- ldmatrix: four 8x8 tiles of 16-bit elements; lanes 8i..8i+7 give the row addresses
// of tile i, and register i of lane l receives tile i's (row l/4, columns 2(l%4), +1), or with
// .trans its (rows 2(l%4), +1, column l/4).

__device__ __forceinline__ void load_matrix_x4(uint32_t (&r)[4], const void* shared) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(shared)));
}

__device__ __forceinline__ void load_matrix_x4_transposed(uint32_t (&r)[4], const void* shared) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(shared)));
}

// ---- mma.sync: c (16x8 fp32) += a (16x16) · b (16x8), inputs of type T ----
template <typename T>
__device__ __forceinline__ void mma_16x8x16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "bf16 or fp16 inputs");
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
}

// ---- cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b: two fp32 values to FP8 codes of format F ----
// Each rounded to nearest even, beyond the largest finite value the largest finite value, NaN to
// NaN; "the value converted from input a is stored in the upper 8 bits of d and the value
// converted from input b is stored in the lower 8 bits" (PTX ISA, cvt). The instruction needs
// sm_89: code compiled for an older target (the sm_80 code of the default GPU_ARCHS, which an
// Ada GPU runs) computes the same codes with core/fp8.h's conversion instead.
template <Fp8Format F>
__device__ __forceinline__ uint16_t convert_to_fp8x2(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    uint16_t d;
    if constexpr (F == Fp8Format::e4m3)
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(a), "f"(b));
    else
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(a), "f"(b));
    return d;
#else
    return static_cast<uint16_t>(float_to_fp8_bits(a, F) << 8 | float_to_fp8_bits(b, F));
#endif
}

}  // namespace mixgpt::cuda
