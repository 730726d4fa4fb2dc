// What the flash attention launchers share: the checked problem shape, the kernels'
// arguments, dispatch on (dtype, head_dim) and the launch with opted-in shared memory.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/cuda_check.h"
#include "core/tensor.h"
#include "kernels/cuda/common.cuh"

namespace mixgpt::cuda::flash {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Shape {
    int batch, length, channels, heads, head_dim;
};

// qkv (B,T,3C) of a supported dtype and head_dim, 16-byte aligned, within the launch limits;
// throws Error naming the op otherwise. Defined in flash_attention_forward.cu.
Shape check_qkv(const char* op, const TensorView& qkv, int n_head);

// The kernels' arguments; each launcher sets the pointers its kernels use, the rest stay null.
template <typename T>
struct Params {
    const T* qkv;   // (B,T,3C)
    T* out;         // (B,T,C): written by the forward
    float* lse;     // (B,H,T): written by the forward, read by the backward
    const T* dout;  // (B,T,C)
    float* delta;   // (B,H,T) rowsum(dout ∘ out)
    T* dqkv;        // (B,T,3C)
    int batch, length, channels, heads;
    float scale;       // 1 / sqrt(head_dim)
    float scale_log2;  // scale * log2(e)
};

template <typename T>
Params<T> make_params(const Shape& shape) {
    Params<T> params{};
    params.batch = shape.batch;
    params.length = shape.length;
    params.channels = shape.channels;
    params.heads = shape.heads;
    params.scale = 1.f / std::sqrt(static_cast<float>(shape.head_dim));
    params.scale_log2 = params.scale * kLog2e;
    return params;
}

// Calls f(T{}, std::integral_constant<int, head_dim>{}) for a supported (dtype, head_dim).
template <typename F>
void dispatch(DType dtype, int head_dim, F&& f) {
    const auto with_type = [&](auto tag) {
        if (head_dim == 64)
            f(tag, std::integral_constant<int, 64>{});
        else
            f(tag, std::integral_constant<int, 128>{});
    };
    if (dtype == DType::bf16)
        with_type(__nv_bfloat16{});
    else
        with_type(__half{});
}

template <typename Kernel, typename Arguments>
void launch(Kernel kernel, dim3 grid, int threads, size_t shared_bytes, cudaStream_t stream,
            const Arguments& arguments) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared_bytes)));
    launch_kernel(kernel, grid, threads, shared_bytes, stream, arguments);
}

}  // namespace mixgpt::cuda::flash
