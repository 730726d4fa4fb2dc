// A whole model's forward and backward pass in float64, composed of tests/reference_f64.h's ops
// and read from the family description (model/family.h), for both families:
//   gpt2   embeddings + learned positions, pre-LayerNorm blocks (attention, 4x MLP with tanh-GELU),
//          final LayerNorm, logits against wte, biases everywhere;
//   llama  token embeddings, pre-RMSNorm blocks (RoPE and grouped-query attention, SwiGLU MLP),
//          final RMSNorm, logits against the output head (or the tied embedding), no biases;
// either family's MLP replaced by ReLU² under config.mlp (relu2: one product, relu(x)^2), and
// every norm parameter-free without config.norm_weights (weight 1, bias 0), a norm of the
// embeddings under config.embedding_norm, and the query and key heads RMS-normalised before
// attention under config.qk_norm, attention kept within documents under config.document_separator
// and within the sliding window under config.attention_window (window_pattern's S layers), positions
// (learned and RoPE's alike) restarted at each document under config.document_positions;
// then the per-position losses, of the logits capped under config.logit_softcap; the training pass
// also takes a z-loss weight (the objective gains z_loss * logsumexp^2 per position). The model-level
// reference of tests that score whole sequences (multiple-choice evaluation) and of the Llama family's parity
// tests, with the same semantics as model/gpt.h's forward and forward_backward.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/parameters.h"
#include "tests/reference_f64.h"

namespace mixgpt {

class F64Gpt {
public:
    // parameters: the fp32 arena in model/parameters.h's layout (a checkpoint's masters).
    F64Gpt(const GPTConfig& config, const std::vector<float>& parameters);

    // One sequence: tokens and targets (t), t <= max_seq_len. Returns each position's loss
    // -log softmax(logits)[target] (t).
    F64Vector losses(const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets) const;

    struct Pass {
        F64Vector losses;     // (B*T) the cross-entropy alone
        F64Vector z_losses;   // (B*T) z_loss * logsumexp^2
        F64Vector gradients;  // the arena's layout: d(mean of losses + z_losses over B*T) / d parameter
    };
    // A batch of B sequences of length T, tokens and targets (B, T): losses and the gradients of
    // their mean, as GPT::forward_backward with gradient_scale 1 / (B*T) and GPT::set_z_loss(z_loss)
    // computes them.
    Pass forward_backward(const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets, int B,
                          int T, double z_loss = 0.0) const;

private:
    // The tensor of `role` in block `layer` (-1: model-level), or an empty vector when the family
    // has none (a bias of a family without biases).
    F64Vector parameter(Role role, int layer = -1) const;
    void accumulate(F64Vector& gradients, Role role, int layer, const F64Vector& gradient) const;
    // A norm's weight or bias, or C copies of `parameter_free` (1 or 0) when the model has none.
    F64Vector norm_parameter(Role role, int layer, double parameter_free) const;
    struct Norm {
        F64Vector out, rstd;
    };
    Norm norm_forward(const F64Vector& inp, Role weight, int layer, int N) const;
    // d inp; the weight's (and bias's) gradients added into `gradients`.
    F64Vector norm_backward(F64Vector& gradients, const F64Vector& dout, const F64Vector& inp, Role weight,
                            int layer, int N) const;
    AttentionParams attention_params() const;

    GPTConfig config_;
    ParameterLayout layout_;
    F64Vector arena_;  // the parameters widened to float64
};

}  // namespace mixgpt
