// The activation buffers a GPT keeps for batch B, sequence T, a precision and a
// recompute policy: one arena of named buffers, each `copies` tensors of one
// shape (copies == n_layer: one per layer; 1: shared scratch that the backward
// pass refills by recomputation). plan_memory and the GPT use this same list.
//
// N = B * T, act = activation_dtype(precision), L = n_layer
//   buffer         shape        copies: none / selective / full
//   residual       (N, C)       L+1 (x_0 = embeddings, x_l = input of block l, x_L)
//   ln1            (N, C)       L / 1 / 1
//   ln1_mean/rstd  (N) f32      L / L / 1
//   qkv            (N, 3C)      L / L / 1
//   attention      (N, C)       L / L / 1
//   lse            (B, H, T) f32 L / L / 1
//   residual2      (N, C)       L / L / 1   (x_l + attention branch)
//   ln2            (N, C)       L / 1 / 1
//   ln2_mean/rstd  (N) f32      L / L / 1
//   fc             (N, 4C)      L / L / 1   (pre-GELU)
//   fc_gelu        (N, 4C)      L / 1 / 1
//   lnf            (N, C), lnf_mean/rstd (N) f32, logits (N, Vp), losses (N) f32      1
//   branch (N, C), grad_residual (N, C), grad_narrow (N, C), grad_wide (N, 4C)        1 (scratch)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/precision.h"
#include "model/config.h"

namespace mixgpt {

struct ActivationBuffer {
    std::string name;
    DType dtype = DType::f32;
    int copies = 1;
    int64_t elements = 0;   // per copy
    size_t offset = 0;      // bytes from the start of the arena (64-byte aligned)
    size_t copy_bytes = 0;  // bytes per copy, rounded up to 64

    size_t bytes() const { return copy_bytes * static_cast<size_t>(copies); }
};

class ActivationLayout {
public:
    ActivationLayout(const GPTConfig& config, int batch_size, int seq_len, Precision precision,
                     Recompute recompute);

    const std::vector<ActivationBuffer>& buffers() const { return buffers_; }
    const ActivationBuffer& find(const std::string& name) const;  // throws Error for an unknown name
    size_t total_bytes() const { return total_bytes_; }

private:
    void add(const std::string& name, DType dtype, int copies, int64_t elements);

    std::vector<ActivationBuffer> buffers_;
    size_t total_bytes_ = 0;
};

}  // namespace mixgpt
