// Causal attention in fp32 as cuBLASLt products (attention_products.cu): what fp32 and tf32 runs
// train with, in place of the simple kernels' one-warp-per-row dot products.
//
// For each sequence b, each of the H / Hkv query heads j of a key/value group, and the key/value
// heads g in chunks, one strided-batched product per matrix, over the chunk's heads:
//   forward   S = Q K^T (T,T)  ->  P = softmax(scale S) under the masks, lse  ->  O = P V
//   backward  S = Q K^T -> P = exp(scale S - lse);  dP = dO V^T;  dS = scale P (dP - delta),
//             delta_t = sum_s P_ts dP_ts;  dV += P^T dO;  dQ = dS K;  dK += dS^T Q
// All in fp32: products in CUBLAS_COMPUTE_32F (not TF32: the CPU backend's attention is fp32 under
// tf32 as well; tf32 rounds the matmul ops' operands only), the masks and softmax in kernels that
// reduce each row in a fixed tree. The whole (T,T) square is multiplied and the masked half set to
// zero in P: twice the causal FLOPs, at the device's fp32 GEMM rate rather than the simple
// kernels'. A key/value head's dk and dv add its query heads in head order (j ascending), as the
// other kernels do. Under RoPE, q and k of one sequence are first rotated into scratch (rounded to
// fp32, as the CPU backend rounds them), and the products' dq and dk are rotated back in dqkv.
//
// Scratch: two (T,T) fp32 matrices per head of a chunk (S or P, and dP), at most the backend's
// BackendOptions::attention_products_bytes; a length whose one head needs more takes the simple
// kernels, and so does every fp32 attention of a backend once cuBLASLt has offered no algorithm
// for one of these products (a warning says which).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cuda/cublaslt_matmul.h"
#include "kernels/cuda/scratch.h"
#include "kernels/ops.h"

namespace mixgpt::cuda {

// The heads of a packed qkv (kernels/ops.def): B sequences of T rows, H query and Hkv key/value heads.
struct AttentionProductsShape {
    int64_t B, T, H, Hkv;
    int head_dim;
};

// Where the products run, and what they read besides the tensors: RoPE's table (null: none), the
// document starts (B,T) (null: causal only), the window (0: none), heads per chunk (> 0).
struct AttentionProductsContext {
    LtMatmulRunner& matmuls;
    ScratchSpace& scratch;
    cudaStream_t stream;
    const float* rope;
    const int32_t* starts;
    int window;
    int64_t chunk_heads;
};

// Key/value heads of one chunk whose two (T,T) fp32 score matrices fit in `bytes` (at most Hkv);
// 0 when not even one head's do.
int64_t attention_products_chunk_heads(int64_t T, int64_t Hkv, size_t bytes);

// out (B,T,H·hd) f32, lse (B,H,T) f32 from qkv (B,T,(H+2Hkv)·hd) f32: attention_forward's contract.
// Returns "" when done, or the first product cuBLASLt offers no algorithm for (in
// describe_product's words): the pass stopped there, part of it enqueued, and the caller must
// compute every output another way.
std::string attention_products_forward(const AttentionProductsContext& context,
                                       const AttentionProductsShape& shape, float* out, float* lse,
                                       const float* qkv);
// dqkv (B,T,(H+2Hkv)·hd) f32 (overwritten) from dout (B,T,H·hd), qkv and the forward's lse:
// attention_backward's contract; returns as the forward.
std::string attention_products_backward(const AttentionProductsContext& context,
                                        const AttentionProductsShape& shape, float* dqkv, const float* dout,
                                        const float* qkv, const float* lse);

}  // namespace mixgpt::cuda
