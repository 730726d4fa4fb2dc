// Plain, single-threaded float64 implementations of every op of kernels/ops.h,
// forward and backward, on std::vector<double> with shapes passed as ints.
//
// They are the reference the backends are judged against: the CPU backend's
// tests compare with them (relative norm error for fp32, the 2x rule for low
// precision), the GPU tests (tests/gpu/) use them as the FP64 reference, and
// tests/test_gradcheck_ops.cpp validates every backward here against central
// differences of the matching forward. Semantics follow the comments of
// kernels/ops.h; where those leave a choice, the choice is written here.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops.h"

namespace mixgpt {

using F64Vector = std::vector<double>;

// ||out - ref|| / ||ref|| (Euclidean norms; ||out - ref|| when ref is all zero).
double relative_norm_error(const std::vector<double>& out, const std::vector<double>& ref);

// ---- embeddings ----
// out (B,T,C) = wte[tokens] + wpe[p]; tokens (B,T); wte (Vp,C); wpe (maxT,C); p = positions[b,t]
// (B*T, f64_document_positions) when given, else t
F64Vector f64_embedding_forward(const std::vector<int32_t>& tokens, const F64Vector& wte,
                                const F64Vector& wpe, int B, int T, int C, const std::vector<int>& positions = {});
// dwte (Vp,C) +=, dwpe (maxT,C) += at row p as above; dout (B,T,C)
void f64_embedding_backward(F64Vector& dwte, F64Vector& dwpe, const F64Vector& dout,
                            const std::vector<int32_t>& tokens, int B, int T, int C,
                            const std::vector<int>& positions = {});

// ---- layer norm, eps = 1e-5, biased variance ----
struct F64LayerNormForward {
    F64Vector out;   // (N,C)
    F64Vector mean;  // (N)
    F64Vector rstd;  // (N) = 1 / sqrt(variance + eps)
};
F64LayerNormForward f64_layernorm_forward(const F64Vector& inp, const F64Vector& weight,
                                          const F64Vector& bias, int N, int C);
struct F64ResidualLayerNormForward {
    F64Vector residual_out;    // (N,C) = residual_in + branch
    F64LayerNormForward norm;  // LN(residual_out)
};
F64ResidualLayerNormForward f64_residual_layernorm_forward(const F64Vector& residual_in,
                                                           const F64Vector& branch, const F64Vector& weight,
                                                           const F64Vector& bias, int N, int C);
struct F64LayerNormBackward {
    F64Vector dinp;     // (N,C)
    F64Vector dweight;  // (C)
    F64Vector dbias;    // (C)
};
// The statistics are recomputed from inp in float64.
F64LayerNormBackward f64_layernorm_backward(const F64Vector& dout, const F64Vector& inp,
                                            const F64Vector& weight, int N, int C);

// ---- RMS norm: out = inp / sqrt(mean(inp^2) + epsilon) * weight ----
struct F64RmsNormForward {
    F64Vector out;   // (N,C)
    F64Vector rstd;  // (N) = 1 / sqrt(mean(inp^2) + epsilon)
};
F64RmsNormForward f64_rmsnorm_forward(const F64Vector& inp, const F64Vector& weight, int N, int C,
                                      double epsilon);
struct F64ResidualRmsNormForward {
    F64Vector residual_out;  // (N,C) = residual_in + branch
    F64RmsNormForward norm;  // RMSNorm(residual_out)
};
F64ResidualRmsNormForward f64_residual_rmsnorm_forward(const F64Vector& residual_in, const F64Vector& branch,
                                                       const F64Vector& weight, int N, int C, double epsilon);
struct F64RmsNormBackward {
    F64Vector dinp;     // (N,C)
    F64Vector dweight;  // (C)
};
// The statistics are recomputed from inp in float64.
F64RmsNormBackward f64_rmsnorm_backward(const F64Vector& dout, const F64Vector& inp, const F64Vector& weight,
                                        int N, int C, double epsilon);

// ---- matrix products ----
struct F64MatmulForward {
    F64Vector out;       // (M,N) = inp · weight^T + bias, or gelu of that with gelu
    F64Vector pre_gelu;  // (M,N) the product before GELU; empty without gelu
};
// inp (M,K); weight (N,K); bias (N) or empty for none.
F64MatmulForward f64_matmul_forward(const F64Vector& inp, const F64Vector& weight, const F64Vector& bias,
                                    int M, int K, int N, bool gelu);
// dinp (M,K) = dout (M,N) · weight (N,K)
F64Vector f64_matmul_backward_input(const F64Vector& dout, const F64Vector& weight, int M, int K, int N);
struct F64MatmulWeightGradient {
    F64Vector dweight;  // (N,K) = dout^T · inp
    F64Vector dbias;    // (N) column sums of dout
};
F64MatmulWeightGradient f64_matmul_backward_weight(const F64Vector& dout, const F64Vector& inp, int M, int K,
                                                   int N);

// ---- GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) ----
double f64_gelu(double x);
double f64_gelu_derivative(double x);
F64Vector f64_gelu_forward(const F64Vector& inp);
F64Vector f64_gelu_backward(const F64Vector& dout, const F64Vector& pre_gelu);

// ---- ReLU²: out = max(x, 0)^2, d/dx = 2 max(x, 0) ----
F64Vector f64_relu2_forward(const F64Vector& inp);
F64Vector f64_relu2_backward(const F64Vector& dout, const F64Vector& inp);

// ---- SwiGLU: gate_up (M,2F) = [gate | up], out (M,F) = silu(gate) * up, silu(g) = g / (1 + e^-g) ----
F64Vector f64_swiglu_forward(const F64Vector& gate_up, int M, int F);
// dgate_up (M,2F) from dout (M,F).
F64Vector f64_swiglu_backward(const F64Vector& dout, const F64Vector& gate_up, int M, int F);

// ---- QK-norm: each query and key head of every qkv row (N rows of (H+2·Hkv)·hd) RMS-normalised ----
struct F64QkNormForward {
    F64Vector qkv;   // (N, (H+2·Hkv)·hd): q and k heads x / sqrt(mean(x^2) + epsilon), v heads copied
    F64Vector rstd;  // (N, H+Hkv)
};
F64QkNormForward f64_qk_norm_forward(const F64Vector& qkv, int N, int H, int Hkv, int hd, double epsilon);
// d qkv before the norm from dqkv (N, (H+2·Hkv)·hd), the gradients of the normalised rows; qkv the
// rows before the norm. Value columns pass through.
F64Vector f64_qk_norm_backward(const F64Vector& dqkv, const F64Vector& qkv, int N, int H, int Hkv, int hd,
                               double epsilon);

// ---- causal multi-head attention, scale 1/sqrt(C / n_head) ----
struct F64AttentionForward {
    F64Vector out;  // (B,T,C)
    F64Vector lse;  // (B,H,T) log-sum-exp of each query's scaled scores over keys 0..t
};
// qkv (B,T,3C): [q | k | v] along the last axis, head h at columns h*hd..(h+1)*hd of each.
F64AttentionForward f64_attention_forward(const F64Vector& qkv, int B, int T, int C, int n_head);
// dqkv (B,T,3C) from dout (B,T,C).
F64Vector f64_attention_backward(const F64Vector& dout, const F64Vector& qkv, int B, int T, int C,
                                 int n_head);

// The general form, Backend::attention_* of kernels/ops.def: qkv (B,T,(H+2Hkv)·hd) holding H query
// heads, then Hkv key heads, then Hkv value heads; query head h attends with key/value head
// h / (H/Hkv); with params.rope_theta > 0 the q and k heads of position `first_position` + t are
// rotated (rotate-half pairs (i, i + hd/2) by (first_position + t) · theta^(-2i/hd), in float64)
// before the scores. out (B,T,H·hd), lse (B,H,T). The document mask: `documents` numbers each
// position's document (B*T, f64_document_numbers), a query seeing only the keys of its own; empty:
// causal only. (params' own document bounds are backend memory and ignored here.) params.window
// > 0: query t sees only keys s with t - s < window. positions (B*T), when given, are the RoPE
// positions in place of first_position + t (f64_document_positions: restarted at each document).
F64AttentionForward f64_attention_forward(const F64Vector& qkv, int B, int T, int head_dim,
                                          const AttentionParams& params, int first_position = 0,
                                          const std::vector<int>& documents = {},
                                          const std::vector<int>& positions = {});
// dqkv (B,T,(H+2Hkv)·hd) from dout (B,T,H·hd): the gradients of the unrotated q, k and v, a key/value
// head's summed over its query heads.
F64Vector f64_attention_backward(const F64Vector& dout, const F64Vector& qkv, int B, int T, int head_dim,
                                 const AttentionParams& params, const std::vector<int>& documents = {},
                                 const std::vector<int>& positions = {});
// Each position's document number (B*T) in token rows (B,T): the separators before it in its row
// (a separator belongs to the document it ends).
std::vector<int> f64_document_numbers(const std::vector<int32_t>& tokens, int B, int T, int32_t separator);
// Each position's place in its document (B*T): 0 at a row's start and after each separator.
std::vector<int> f64_document_positions(const std::vector<int32_t>& tokens, int B, int T, int32_t separator);
// The RoPE rotation alone: the q and k heads of packed rows qkv (B,T,(H+2Hkv)·hd) rotated at
// positions first_position + t (inverse: rotated back, which takes the gradients of rotated values
// to those of the originals), the v heads as they are.
F64Vector f64_rope(const F64Vector& qkv, int B, int T, int head_dim, const AttentionParams& params,
                   int first_position = 0, bool inverse = false);

// ---- telemetry ----
// tensor_statistics (kernels/ops.def) of values, minus reference when it is not empty, in double.
struct F64Statistics {
    double sum_squares = 0, amax = 0, small = 0, non_finite = 0;
};
F64Statistics f64_tensor_statistics(const F64Vector& values, const F64Vector& reference, double small);
// exponent_histogram's bins (kernels/ops.h) of values, each counted by frexp in double: a finite
// nonzero v = m · 2^p with 0.5 <= |m| < 1 lies in floor(log2|v|) = p - 1.
std::vector<uint64_t> f64_exponent_histogram(const F64Vector& values);

// ---- fused classifier over a padded vocabulary ----
struct F64Classifier {
    F64Vector losses;    // (N) logsumexp(c[i, :V]) - c[i, target], c the capped logits
    F64Vector z_losses;  // (N) z_loss * logsumexp(c[i, :V])^2
    // (N,Vp) gradient_scale * loss_scale * d(losses + z_losses)/dlogits; 0 in columns >= V
    F64Vector dlogits;
    F64Vector capped;  // (N,Vp) c = softcap * tanh(z / softcap) in columns < V (z without the cap)
};
// logits (N,Vp); targets (N) in [0, V); softcap, z_loss as in kernels/ops.h's ClassifierParams
// (0: off). The gradient is the chain rule written out: (1 + 2 z_loss lse) softmax - onehot,
// times 1 - tanh^2 under the cap.
F64Classifier f64_classifier(const F64Vector& logits, const std::vector<int32_t>& targets, int N, int Vp,
                             int V, double gradient_scale, double loss_scale, double softcap = 0.0,
                             double z_loss = 0.0);

// ---- optimizer ----
struct F64GradNorm {
    double norm_squared = 0.0;
    bool non_finite = false;  // some gradient is Inf or NaN (the step is to be skipped)
};
F64GradNorm f64_grad_norm_squared(const F64Vector& grads);

// One AdamW step with the semantics of Backend::adamw_step, reading and updating
// `status` the same way. Unless status.skip:
//   t = status.optimizer_steps + 1, stored back when hyper.count_step
//   g = grad / loss_scale
//   norm = sqrt(grad_norm_squared) / loss_scale; if max_grad_norm > 0 and norm > max_grad_norm,
//     g *= max_grad_norm / norm
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   p -= lr * ( (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + wd * p ), wd only for i < decay_count
void f64_adamw_step(F64Vector& params, const F64Vector& grads, F64Vector& m, F64Vector& v,
                    int64_t decay_count, const AdamWHyper& hyper, StepStatus& status);

// Backend::update_loss_scale:
//   skip:     skipped_steps += 1, clean_steps = 0; dynamic: loss_scale = max(loss_scale * backoff, min_scale)
//   no skip:  clean_steps += 1; dynamic and clean_steps >= growth_interval:
//             loss_scale = min(loss_scale * growth, max_scale), clean_steps = 0
void f64_update_loss_scale(StepStatus& status, const LossScaleConfig& config);

}  // namespace mixgpt
