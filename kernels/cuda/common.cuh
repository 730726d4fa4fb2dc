// Device-side building blocks shared by the CUDA op files: storage conversions
// for the three activation types, 16-byte packs, warp reductions, dispatch on a
// TensorView's dtype and every kernel launch. Shared memory and the instructions
// only a GPU runs as written: device_primitives.cuh.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/cuda_check.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cuda/launch_recorder.h"

// The one place the CUDA simulator's build (tests/cuda_sim/README.md) differs: it leaves out
// the GPU's primitives, which its force-included prelude defines for the CPU under the same names.
#ifndef MIXGPT_CUDA_SIM
#include "kernels/cuda/device_primitives.cuh"
#endif

namespace mixgpt::cuda {

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// The dynamic shared memory a kernel declares (declare_launch_limits) when its launcher asks for
// what the shape needs, up to the device's opt-in limit, and checks that limit itself.
constexpr size_t kDeviceSharedLimit = SIZE_MAX;

// ---- conversions between the storage types and fp32 (round to nearest even) ----
__device__ __forceinline__ float to_float(float value) { return value; }
__device__ __forceinline__ float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }
__device__ __forceinline__ float to_float(__half value) { return __half2float(value); }

template <typename T>
__device__ __forceinline__ T from_float(float value);
template <>
__device__ __forceinline__ float from_float<float>(float value) {
    return value;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float value) {
    return __float2bfloat16_rn(value);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float value) {
    return __float2half_rn(value);
}

// ---- packs: N consecutive elements moved as one aligned access ----
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
    T values[N];
};

// Elements of T in one 16-byte access.
template <typename T>
constexpr int kPack16 = 16 / static_cast<int>(sizeof(T));

template <int N, typename T>
__device__ __forceinline__ void load_floats(float (&out)[N], const T* source) {
    const Pack<T, N> pack = *reinterpret_cast<const Pack<T, N>*>(source);
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = to_float(pack.values[i]);
}

// load_floats of source + offset, or N copies of `fill` when source is null (the weight 1 and bias 0
// of a parameter-free norm).
template <int N, typename T>
__device__ __forceinline__ void load_floats_or(float (&out)[N], const T* source, int64_t offset, float fill) {
    if (source != nullptr) {
        load_floats<N>(out, source + offset);
        return;
    }
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = fill;
}

template <int N, typename T>
__device__ __forceinline__ void store_floats(T* destination, const float (&in)[N]) {
    Pack<T, N> pack;
#pragma unroll
    for (int i = 0; i < N; ++i) pack.values[i] = from_float<T>(in[i]);
    *reinterpret_cast<Pack<T, N>*>(destination) = pack;
}

// ---- warp reductions (butterfly: every lane ends with the same, order-fixed result) ----
__device__ __forceinline__ float warp_sum(float value) {
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        value += __shfl_xor_sync(kFullMask, value, offset);
    return value;
}

__device__ __forceinline__ double warp_sum(double value) {
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        value += __shfl_xor_sync(kFullMask, value, offset);
    return value;
}

__device__ __forceinline__ float warp_max(float value) {
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        value = fmaxf(value, __shfl_xor_sync(kFullMask, value, offset));
    return value;
}

// ---- host helpers ----

// Calls f(T{}) with T the CUDA storage type of `dtype` (a float format); throws Error for
// DType::i32, which no float kernel reads or writes.
template <typename F>
void dispatch_dtype(DType dtype, F&& f) {
    switch (dtype) {
        case DType::f32:
            f(float{});
            return;
        case DType::bf16:
            f(__nv_bfloat16{});
            return;
        case DType::f16:
            f(__half{});
            return;
        case DType::i32:
            break;
    }
    throw Error(std::string("cuda: no float kernel for a tensor of ") + dtype_name(dtype));
}

inline bool is_aligned(const void* pointer, size_t alignment) {
    return reinterpret_cast<uintptr_t>(pointer) % alignment == 0;
}

// Whether every non-null pointer allows 16-byte accesses.
inline bool all_aligned_16(std::initializer_list<const void*> pointers) {
    for (const void* p : pointers)
        if (p != nullptr && !is_aligned(p, 16)) return false;
    return true;
}

inline unsigned blocks_for(int64_t work_items, int items_per_block) {
    return static_cast<unsigned>((work_items + items_per_block - 1) / items_per_block);
}

// After every launch: the launch error, and with MIXGPT_DEBUG_SYNC the kernel's own.
inline void check_launch(cudaStream_t stream) {
    CUDA_CHECK_LAST_LAUNCH();
#ifdef MIXGPT_DEBUG_SYNC
    CUDA_CHECK(cudaStreamSynchronize(stream));
#else
    (void)stream;
#endif
}

// kernel<<<grid, block, shared_bytes, stream>>>(arguments...), then check_launch; a live
// LaunchRecorder notes the launch.
template <typename... Parameters, typename... Arguments>
void launch_kernel(void (*kernel)(Parameters...), dim3 grid, dim3 block, size_t shared_bytes,
                   cudaStream_t stream, Arguments&&... arguments) {
    note_launch(reinterpret_cast<const void*>(kernel), block, shared_bytes);
    enqueue_kernel(kernel, grid, block, shared_bytes, stream, std::forward<Arguments>(arguments)...);
    check_launch(stream);
}

}  // namespace mixgpt::cuda
