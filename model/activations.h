// The activation buffers a model keeps for batch B, sequence T, a precision and a recompute
// policy: one arena of buffers, each `copies` tensors of one shape (copies == n_layer: one per
// layer; 1: shared scratch that the backward pass refills by recomputation; 0: a buffer the
// family does not use). plan_memory and the GPT use this same list.
//
// N = B * T, act = activation_dtype(precision), L = n_layer; Q = (H + 2 Hkv) hd, M = the MLP's
// input width (4C, 2F for SwiGLU, F for ReLU²), D = its hidden width (4C, or F)
//   buffer                     shape         copies: none / selective / full
//   residual                   (N, C)        L+1 (x_0 = embeddings, x_l = input of block l, x_L)
//   attention_norm             (N, C)        L / 1 / 1
//   attention_norm_mean, _rstd (N) f32       L / L / 1   (mean: LayerNorm only)
//   qkv                        (N, Q)        L / L / 1
//   attention                  (N, C)        L / L / 1
//   lse                        (B, H, T) f32 L / L / 1
//   qk_norm_rstd               (N, H+Hkv) f32 L / L / 1   (--qk-norm only; qkv holds the normalised heads)
//   attention_residual         (N, C)        L / L / 1   (x_l + attention branch)
//   mlp_norm                   (N, C)        L / 1 / 1
//   mlp_norm_mean, _rstd       (N) f32       L / L / 1   (mean: LayerNorm only)
//   mlp_input                  (N, M)        L / L / 1   (before the activation)
//   mlp_hidden                 (N, D)        L / 1 / 1   (after it)
//   final_norm (N, C), final_norm_mean/rstd (N) f32, logits (N, Vp), losses (N) f32         1
//   z_losses (N) f32 (the z-loss terms of training's --z-loss)                                1
//   branch (N, C), grad_residual (N, C), grad_narrow (N, C), grad_wide (N, max(Q, M))     1 (scratch)
//   grad_hidden (N, D)                                                    1 (SwiGLU only; GELU, ReLU² work in place)
//   embedding (N, C), embedding_norm_mean/rstd (N) f32     1 (--embedding-norm only: the norm's input;
//                                                            its output is residual x_0)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/precision.h"
#include "model/config.h"

namespace mixgpt {

enum class Activation {
    residual,
    attention_norm,
    attention_norm_mean,
    attention_norm_rstd,
    qkv,
    attention,
    lse,
    qk_norm_rstd,
    attention_residual,
    mlp_norm,
    mlp_norm_mean,
    mlp_norm_rstd,
    mlp_input,
    mlp_hidden,
    final_norm,
    final_norm_mean,
    final_norm_rstd,
    logits,
    losses,
    z_losses,
    branch,
    grad_residual,
    grad_narrow,
    grad_wide,
    grad_hidden,
    embedding,
    embedding_norm_mean,
    embedding_norm_rstd,
};
constexpr int kActivationCount = static_cast<int>(Activation::embedding_norm_rstd) + 1;

const char* activation_name(Activation activation);

struct ActivationBuffer {
    DType dtype = DType::f32;
    int copies = 0;
    int64_t elements = 0;   // per copy
    size_t offset = 0;      // bytes from the start of the arena (64-byte aligned)
    size_t copy_bytes = 0;  // bytes per copy, rounded up to 64

    size_t bytes() const { return copy_bytes * static_cast<size_t>(copies); }
};

class ActivationLayout {
public:
    ActivationLayout(const GPTConfig& config, int batch_size, int seq_len, Precision precision,
                     Recompute recompute);

    const ActivationBuffer& operator[](Activation activation) const {
        return buffers_[static_cast<size_t>(activation)];
    }
    size_t total_bytes() const { return total_bytes_; }

private:
    void add(Activation activation, DType dtype, int copies, int64_t elements);

    std::array<ActivationBuffer, kActivationCount> buffers_;
    size_t total_bytes_ = 0;
};

}  // namespace mixgpt
