// What kernels/cuda/device_primitives.cuh gives the kernels under nvcc, for the simulator, under
// the same names in the same namespace (prelude.h includes it; the real header is left out of
// this build): shared memory seen through SharedPointer (shared_pointer.h), launches that run on
// the simulated stream (runtime.h), cp.async, ldmatrix and mma.sync (async_copy.h,
// warp_matrix.h), and the FP8 conversion instruction. The kernels' sources are the same in both
// builds.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/fp8.h"
#include "tests/cuda_sim/async_copy.h"
#include "tests/cuda_sim/block_runner.h"
#include "tests/cuda_sim/runtime.h"
#include "tests/cuda_sim/shared_pointer.h"
#include "tests/cuda_sim/warp_matrix.h"

namespace mixgpt::cuda {

// ---- shared memory: accesses counted under `owner`, the function that took the pointer ----
template <typename T>
using SharedPointer = cuda_sim::SharedPointer<T>;

template <typename T>
SharedPointer<T> shared_pointer(T* address, const char* owner = __builtin_FUNCTION()) {
    return {address, owner};
}

// The block's dynamic shared memory (the launch's shared_bytes), 16-byte aligned.
template <typename T>
SharedPointer<T> dynamic_shared_memory(const char* owner = __builtin_FUNCTION()) {
    return {reinterpret_cast<T*>(cuda_sim::dynamic_shared_memory()), owner};
}

// Its raw address, for ldmatrix and cp.async (whose simulations check and count their accesses).
template <typename T>
T* dynamic_shared_address() {
    return reinterpret_cast<T*>(cuda_sim::dynamic_shared_memory());
}

// ---- the launch: the arguments kept as a launch keeps them; the grid runs when the stream gets there ----
template <typename... Parameters, typename... Arguments>
void enqueue_kernel(void (*kernel)(Parameters...), dim3 grid, dim3 block, size_t shared_bytes,
                    cudaStream_t stream, Arguments&&... arguments) {
    cuda_sim::enqueue_launch(
        stream, reinterpret_cast<const void*>(kernel), grid, block, shared_bytes,
        [kernel, parameters = std::tuple<std::decay_t<Parameters>...>(
                     std::forward<Arguments>(arguments)...)] { std::apply(kernel, parameters); });
}

// ---- what a kernel's launches ask for at most: a launch above it faults, naming the kernel ----
template <int kMaxThreads, size_t kMaxDynamicSharedBytes = 0>
void declare_launch_limits(const char* kernel = __builtin_FUNCTION()) {
    cuda_sim::expect_launch_limits(kernel, kMaxThreads, kMaxDynamicSharedBytes);
}

// ---- cp.async, ldmatrix, mma.sync ----
__device__ __forceinline__ void copy_async_16(void* shared, const void* global, bool valid) {
    cuda_sim::copy_async(shared, global, 16, valid);
}

__device__ __forceinline__ void copy_async_4(void* shared, const void* global, bool valid) {
    cuda_sim::copy_async(shared, global, 4, valid);
}

__device__ __forceinline__ void copy_async_commit() { cuda_sim::copy_async_commit(); }

template <int kPending>
__device__ __forceinline__ void copy_async_wait() {
    cuda_sim::copy_async_wait(kPending);
}

__device__ __forceinline__ void load_matrix_x4(uint32_t (&r)[4], const void* shared) {
    cuda_sim::load_matrix_x4<false>(r, shared);
}

__device__ __forceinline__ void load_matrix_x4_transposed(uint32_t (&r)[4], const void* shared) {
    cuda_sim::load_matrix_x4<true>(r, shared);
}

template <typename T>
__device__ __forceinline__ void mma_16x8x16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "bf16 or fp16 inputs");
    cuda_sim::mma_16x8x16<T>(c, a, b0, b1);
}

// ---- cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b, from the PTX ISA (cvt): "each input is
// converted to the specified format, and the converted values are packed in the destination
// operand d such that the value converted from input a is stored in the upper 8 bits of d and the
// value converted from input b is stored in the lower 8 bits of d"; .rn rounds to nearest even,
// .satfinite gives the largest finite value beyond it and NaN for NaN. Each conversion is
// core/fp8.h's, which tests/test_fp8_conversions.cpp checks over every fp32 input against the OCP
// specification; tests/sim/test_sim_fp8_instruction.cpp checks the packing.
template <Fp8Format F>
__device__ __forceinline__ uint16_t convert_to_fp8x2(float a, float b) {
    return static_cast<uint16_t>(float_to_fp8_bits(a, F) << 8 | float_to_fp8_bits(b, F));
}

}  // namespace mixgpt::cuda
