// The backward pass, after forward_pass left the logit gradients in "logits".
// Under Recompute::selective the LayerNorm and GELU outputs are recomputed here
// from the stored block inputs; under Recompute::full each block's forward is
// rerun from its stored input residual. The recomputed values are bit-identical
// to the forward's (deterministic ops), so the gradients do not depend on the policy.
#include "model/gpt.h"

namespace mixgpt {

void GPT::backward_pass(TensorView tokens, const GradientsReady& ready) {
    const auto stage_done = [&ready](int stage) {
        if (ready) ready(stage);
    };
    const int64_t b = tokens.dim(0), t = tokens.dim(1), N = b * t, C = config_.n_embd;
    const int64_t Vp = config_.padded_vocab_size();
    const TensorView dlogits = activation("logits", 0, {N, Vp});
    const TensorView dresidual = activation("grad_residual", 0, {N, C});  // d loss / d x_l, carried down
    const TensorView dnorm = activation("grad_narrow", 0, {N, C});
    backend_.fill_zero(dresidual.data, dresidual.bytes());

    backend_.matmul_backward_weight(grads_.wte, TensorView(), dlogits, activation("lnf", 0, {N, C}));
    backend_.matmul_backward_input(dnorm, dlogits, weights_.wte, false);
    backend_.layernorm_backward(dresidual, grads_.ln_f_weight, grads_.ln_f_bias, dnorm,
                                activation("residual", config_.n_layer, {N, C}), weights_.ln_f_weight,
                                activation("lnf_mean", 0, {N}), activation("lnf_rstd", 0, {N}));
    stage_done(0);
    for (int l = config_.n_layer - 1; l >= 0; --l) {
        block_backward(l, block_activations(l, b, t), b, t);
        stage_done(config_.n_layer - l);
    }
    backend_.embedding_backward(grads_.wte, grads_.wpe, TensorView(dresidual.data, act_, {b, t, C}), tokens);
    stage_done(config_.n_layer + 1);
}

void GPT::block_backward(int layer, const BlockActivations& a, int64_t b, int64_t t) {
    const BlockTensors& w = weights_.blocks[static_cast<size_t>(layer)];
    const BlockTensors& g = grads_.blocks[static_cast<size_t>(layer)];
    const int64_t N = b * t, C = config_.n_embd;
    const TensorView dresidual = activation("grad_residual", 0, {N, C});
    const TensorView dnarrow = activation("grad_narrow", 0, {N, C});
    const TensorView dwide = activation("grad_wide", 0, {N, 4 * C});
    const TensorView dqkv = activation("grad_wide", 0, {N, 3 * C});

    if (recompute_ == Recompute::full) {
        backend_.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, a.residual_in, w.ln_1_weight, w.ln_1_bias);
        block_forward_to_gelu(layer, a, -1);
    } else if (recompute_ == Recompute::selective) {
        backend_.layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.residual2, w.ln_2_weight, w.ln_2_bias);
        backend_.gelu_forward(a.fc_gelu, a.fc);
    }

    // MLP: x_{l+1} = residual2 + fc_gelu · Wp^T + bp, fc_gelu = gelu(ln2 · Wfc^T + bfc)
    backend_.matmul_backward_weight(g.mlp_proj_weight, g.mlp_proj_bias, dresidual, a.fc_gelu);
    backend_.matmul_backward_input(dwide, dresidual, w.mlp_proj_weight, false);
    backend_.gelu_backward(dwide, dwide, a.fc);
    backend_.matmul_backward_weight(g.c_fc_weight, g.c_fc_bias, dwide, a.ln2);
    backend_.matmul_backward_input(dnarrow, dwide, w.c_fc_weight, false);
    backend_.layernorm_backward(dresidual, g.ln_2_weight, g.ln_2_bias, dnarrow, a.residual2, w.ln_2_weight,
                                a.ln2_mean, a.ln2_rstd);

    // Attention: residual2 = x_l + attention · Wo^T + bo, attention = attn(ln1 · Wqkv^T + bqkv)
    const TensorView attention_rows(a.attention.data, act_, {N, C});
    backend_.matmul_backward_weight(g.attn_proj_weight, g.attn_proj_bias, dresidual, attention_rows);
    backend_.matmul_backward_input(dnarrow, dresidual, w.attn_proj_weight, false);
    backend_.attention_backward(TensorView(dqkv.data, act_, {b, t, 3 * C}),
                                TensorView(dnarrow.data, act_, {b, t, C}), a.qkv, a.lse,
                                multi_head_attention(config_.n_head));
    if (recompute_ == Recompute::selective)
        backend_.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, a.residual_in, w.ln_1_weight, w.ln_1_bias);
    backend_.matmul_backward_weight(g.c_attn_weight, g.c_attn_bias, dqkv, a.ln1);
    backend_.matmul_backward_input(dnarrow, dqkv, w.c_attn_weight, false);
    backend_.layernorm_backward(dresidual, g.ln_1_weight, g.ln_1_bias, dnarrow, a.residual_in, w.ln_1_weight,
                                a.ln1_mean, a.ln1_rstd);
}

}  // namespace mixgpt
