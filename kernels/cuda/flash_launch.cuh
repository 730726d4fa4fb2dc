// What the flash attention launchers share: the checked problem shape, the kernels'
// arguments, dispatch on (dtype, head_dim) and the launch with opted-in shared memory.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/cuda_check.h"
#include "core/log.h"
#include "core/tensor.h"
#include "kernels/cuda/common.cuh"
#include "kernels/ops.h"

namespace mixgpt::cuda::flash {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Shape {
    int batch, length, heads, kv_heads, head_dim;
};

// qkv (B,T,(H+2Hkv)·hd) of a supported dtype and head_dim, 16-byte aligned, within the launch
// limits; rope, when params.rope_theta > 0, the (rows >= T, hd) f32 [cos | sin] table
// (kernels/rope_table.h), else invalid. Throws Error naming the op otherwise. Defined in
// flash_attention_forward.cu.
Shape check_qkv(const char* op, const TensorView& qkv, const AttentionParams& params, const TensorView& rope);

// The kernels' arguments; each launcher sets the pointers its kernels use, the rest stay null.
template <typename T>
struct Params {
    const T* qkv;       // (B,T,(H+2Hkv)·hd): q heads, then k heads, then v heads
    T* out;             // (B,T,H·hd): written by the forward
    float* lse;         // (B,H,T): written by the forward, read by the backward
    const T* dout;      // (B,T,H·hd)
    float* delta;       // (B,H,T) rowsum(dout ∘ out)
    T* dqkv;            // (B,T,(H+2Hkv)·hd)
    const float* rope;  // (rows >= T, hd) [cos | sin] per position, or null: no RoPE
    // The document mask (AttentionParams::document_starts, _ends), (B,T) each, or null: causal only.
    const int* document_starts;
    const int* document_ends;
    int batch, length, heads, kv_heads;
    int group;           // H / Hkv: query head h reads key/value head h / group
    int64_t row_stride;  // (H+2Hkv)·hd: elements between rows of qkv and dqkv
    int q_width;         // H·hd: between rows of out and dout, and the column where k heads start
    int kv_width;        // Hkv·hd: from a k head to its v head
    float scale;         // 1 / sqrt(head_dim)
    float scale_log2;    // scale * log2(e)
};

template <typename T>
Params<T> make_params(const Shape& shape) {
    Params<T> params{};
    params.batch = shape.batch;
    params.length = shape.length;
    params.heads = shape.heads;
    params.kv_heads = shape.kv_heads;
    params.group = shape.heads / shape.kv_heads;
    params.q_width = shape.heads * shape.head_dim;
    params.kv_width = shape.kv_heads * shape.head_dim;
    params.row_stride = int64_t{params.q_width} + 2 * int64_t{params.kv_width};
    params.scale = 1.f / std::sqrt(static_cast<float>(shape.head_dim));
    params.scale_log2 = params.scale * kLog2e;
    return params;
}

// The first key row `row` of batch `batch`'s sequence sees, and one past the last query that sees
// key `row` (a sliding window comes folded into them: CudaBackend::folded_window); rows past T are
// clamped to the last (they are computed but never stored). Without bounds, the causal mask's 0
// and T. Both are nondecreasing in `row`. Read from memory where they are needed (the L1 holds
// them), not kept in registers: the kernels have none to spare (holding them, or computing the
// window here, spilled registers).
template <typename T>
__device__ __forceinline__ int document_start(const Params<T>& p, int batch, int row) {
    return p.document_starts == nullptr
               ? 0
               : p.document_starts[int64_t{batch} * p.length + min(row, p.length - 1)];
}
template <typename T>
__device__ __forceinline__ int document_end(const Params<T>& p, int batch, int row) {
    return p.document_ends == nullptr ? p.length
                                      : p.document_ends[int64_t{batch} * p.length + min(row, p.length - 1)];
}

// The kernels' document bounds of params (null pointers without the document mask); throws Error
// naming the op unless both or neither are given, each (B,T) i32, and when a window is left in
// params (the launchers take it folded into the bounds).
template <typename T>
void set_document_bounds(Params<T>& arguments, const char* op, const AttentionParams& params,
                         const Shape& shape) {
    MIXGPT_REQUIRE(params.document_starts.valid() == params.document_ends.valid(),
                   format("cuda %s: document_starts and document_ends go together", op));
    MIXGPT_REQUIRE(params.window == 0,
                   format("cuda %s: window %d: the flash kernels take it folded into the document bounds "
                          "(CudaBackend::folded_window)",
                          op, params.window));
    if (!params.document_starts.valid()) return;
    for (const TensorView* bounds : {&params.document_starts, &params.document_ends})
        MIXGPT_REQUIRE(bounds->dtype == DType::i32 && bounds->rank == 2 && bounds->dim(0) == shape.batch &&
                           bounds->dim(1) == shape.length,
                       format("cuda %s: the document bounds are %s, expected (%d, %d) i32", op,
                              bounds->shape_string().c_str(), shape.batch, shape.length));
    arguments.document_starts = params.document_starts.as<const int>();
    arguments.document_ends = params.document_ends.as<const int>();
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
