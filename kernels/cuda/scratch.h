// Temporary device memory of the ops, one region per use. A region is allocated
// the first time it is needed and grows only when a larger shape appears, so the
// steady-state training step allocates nothing.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstddef>

#include "core/memory.h"
#include "kernels/cuda/device_memory.h"

namespace mixgpt::cuda {

enum class ScratchSlot {
    layernorm_partials,  // per-block dweight(/dbias) partial sums of layernorm_backward, rmsnorm_backward
    bias_partials,       // per-chunk column sums of matmul_backward_weight's dbias
    grad_norm_partials,  // per-block sums of squares of grad_norm_squared
    attention_delta,     // rowsum(P * dP) per query of attention_backward (B,H,T)
    attention_scores,    // the fp32 attention's (T,T) score matrices of a chunk of heads (attention_products.h)
    attention_rotated,   // its q and k heads of one sequence rotated by RoPE (T, (H+Hkv)·hd)
    embedding_sort,      // sorted (token, position) pairs and CUB's temporary storage
    tf32_operands,       // the two matmul operands rounded to TF32 under Precision::tf32
    matmul_bias,         // matmul_forward's bias copied to 16-byte alignment when it is not aligned
    fp8_operand_a,       // the first FP8 operand's codes (and transpose) of an fp8_matmul_* op
    fp8_operand_b,       // the second one's
    cublaslt_fallback,   // a product's fp32 result and widened operands on a fallback route (LtMatmulRunner)
    muon_norm,           // muon_momentum's per-block sums of squares and the norm's inverse
    muon_iteration,      // muon_newton_schulz's A, B (s, s) and next X (rows, cols) of one matrix
    window_bounds,       // the flash kernels' document bounds with the sliding window folded in (B,T) x 2
    statistics_partials,  // per-block TensorStatistics of tensor_statistics
    count
};

class ScratchSpace {
public:
    ScratchSpace(DeviceAllocator& allocator, cudaStream_t stream) : allocator_(allocator), stream_(stream) {}

    // At least `bytes` of device memory for `slot`, 256-byte aligned; contents unspecified.
    // Growing waits for the stream first, since queued kernels may still use the old region.
    void* get(ScratchSlot slot, size_t bytes);

private:
    DeviceAllocator& allocator_;
    cudaStream_t stream_;
    std::array<Buffer, static_cast<size_t>(ScratchSlot::count)> regions_;
};

}  // namespace mixgpt::cuda
