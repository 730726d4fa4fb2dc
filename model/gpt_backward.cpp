// The backward pass, after forward_pass left the logit gradients in "logits".
// Under Recompute::selective the norms' outputs and the MLP's activation are recomputed here from
// the stored block inputs; under Recompute::full each block's forward is rerun from its stored
// input residual. The recomputed values are bit-identical to the forward's (the ops promise it:
// kernels/ops.def), so the gradients do not depend on the policy.
#include "model/gpt.h"

namespace mixgpt {

void GPT::norm_backward(TensorView dinp, TensorView dweight, TensorView dbias, TensorView dout, TensorView inp,
                        TensorView weight, const NormViews& statistics) {
    if (family_.norm == NormKind::layernorm)
        backend_.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, statistics.mean, statistics.rstd);
    else
        backend_.rmsnorm_backward(dinp, dweight, dout, inp, weight, statistics.rstd);
}

void GPT::backward_pass(TensorView tokens, const GradientsReady& ready) {
    const auto stage_done = [&ready](int stage) {
        if (ready) ready(stage);
    };
    const int64_t b = tokens.dim(0), t = tokens.dim(1), N = b * t, C = config_.n_embd;
    const int64_t Vp = config_.padded_vocab_size();
    const TensorView dlogits = activation(Activation::logits, 0, {N, Vp});
    const TensorView dresidual = activation(Activation::grad_residual, 0, {N, C});  // d loss / d x_l, carried down
    const TensorView dnorm = activation(Activation::grad_narrow, 0, {N, C});
    backend_.fill_zero(dresidual.data, dresidual.bytes());

    const NextNorm final_norm = next_norm(config_.n_layer - 1, b, t);
    linear_backward_weight(0, LinearRole::head, grads_.head(), TensorView(), dlogits, final_norm.views.out);
    linear_backward_input(0, LinearRole::head, dnorm, dlogits, weights_.head());
    norm_backward(dresidual, grads_[Role::final_norm_weight], grads_[Role::final_norm_bias], dnorm,
                  activation(Activation::residual, config_.n_layer, {N, C}), final_norm.weight, final_norm.views);
    stage_done(0);
    for (int l = config_.n_layer - 1; l >= 0; --l) {
        block_backward(l, block_activations(l, b, t), b, t);
        stage_done(config_.n_layer - l);
    }
    TensorView dembedded = dresidual;  // (N, C) d loss / d embeddings
    if (config_.embedding_norm) {
        const TensorView dinput = activation(Activation::grad_narrow, 0, {N, C});
        backend_.fill_zero(dinput.data, dinput.bytes());
        norm_backward(dinput, grads_[Role::embedding_norm_weight], grads_[Role::embedding_norm_bias], dresidual,
                      activation(Activation::embedding, 0, {N, C}), weights_[Role::embedding_norm_weight],
                      embedding_norm_views(N));
        dembedded = dinput;
    }
    backend_.embedding_backward(grads_[Role::token_embedding], grads_[Role::position_embedding],
                                TensorView(dembedded.data, act_, {b, t, C}), tokens, document_positions(b, t));
    stage_done(config_.n_layer + 1);
}

// MLP: x_{l+1} = attention_residual + mlp_hidden · Wout^T (+ bout), mlp_hidden = act(mlp_norm · Win^T (+ bin))
void GPT::mlp_backward(int layer, const BlockActivations& a, int64_t N) {
    const auto w = [&](Role role) { return weights_.block(layer, role); };
    const auto g = [&](Role role) { return grads_.block(layer, role); };
    const TensorView dresidual = activation(Activation::grad_residual, 0, {N, config_.n_embd});
    const TensorView dinput = activation(Activation::grad_wide, 0, {N, a.mlp_input.dim(1)});  // (N, M)
    // d mlp_hidden (N, D): GELU's and ReLU²'s backward work in place, SwiGLU's reads it from a buffer
    // of its own.
    const MlpKind mlp = config_.mlp_kind();
    const TensorView dhidden = mlp != MlpKind::swiglu ? dinput
                                                      : activation(Activation::grad_hidden, 0, {N, a.mlp_hidden.dim(1)});
    linear_backward_weight(layer, LinearRole::mlp_output, g(Role::mlp_output_weight), g(Role::mlp_output_bias),
                           dresidual, a.mlp_hidden);
    linear_backward_input(layer, LinearRole::mlp_output, dhidden, dresidual, w(Role::mlp_output_weight));
    switch (mlp) {
        case MlpKind::gelu:
            backend_.gelu_backward(dinput, dhidden, a.mlp_input);
            break;
        case MlpKind::swiglu:
            backend_.swiglu_backward(dinput, dhidden, a.mlp_input);
            break;
        case MlpKind::relu2:
            backend_.relu2_backward(dinput, dhidden, a.mlp_input);
            break;
    }
    linear_backward_weight(layer, LinearRole::mlp_input, g(Role::mlp_input_weight), g(Role::mlp_input_bias), dinput,
                           a.mlp_norm.out);
}

void GPT::block_backward(int layer, const BlockActivations& a, int64_t b, int64_t t) {
    const auto w = [&](Role role) { return weights_.block(layer, role); };
    const auto g = [&](Role role) { return grads_.block(layer, role); };
    const int64_t N = b * t, C = config_.n_embd, Q = a.qkv.dim(2);
    const TensorView dresidual = activation(Activation::grad_residual, 0, {N, C});
    const TensorView dnarrow = activation(Activation::grad_narrow, 0, {N, C});
    const TensorView dqkv = activation(Activation::grad_wide, 0, {N, Q});

    if (recompute_ == Recompute::full) {
        norm_forward(a.attention_norm, a.residual_in, w(Role::attention_norm_weight), w(Role::attention_norm_bias));
        block_forward_to_mlp_hidden(layer, a, -1);
    } else if (recompute_ == Recompute::selective) {
        norm_forward(a.mlp_norm, a.attention_residual, w(Role::mlp_norm_weight), w(Role::mlp_norm_bias));
        mlp_activation_forward(a.mlp_hidden, a.mlp_input);
    }

    mlp_backward(layer, a, N);
    const TensorView dinput = activation(Activation::grad_wide, 0, {N, a.mlp_input.dim(1)});
    linear_backward_input(layer, LinearRole::mlp_input, dnarrow, dinput, w(Role::mlp_input_weight));
    norm_backward(dresidual, g(Role::mlp_norm_weight), g(Role::mlp_norm_bias), dnarrow, a.attention_residual,
                  w(Role::mlp_norm_weight), a.mlp_norm);

    // Attention: attention_residual = x_l + attention · Wo^T (+ bo), attention = attn(norm · Wqkv^T (+ bqkv))
    const TensorView attention_rows(a.attention.data, act_, {N, C});
    linear_backward_weight(layer, LinearRole::attention_output, g(Role::attention_output_weight),
                           g(Role::attention_output_bias), dresidual, attention_rows);
    linear_backward_input(layer, LinearRole::attention_output, dnarrow, dresidual, w(Role::attention_output_weight));
    backend_.attention_backward(TensorView(dqkv.data, act_, {b, t, Q}), TensorView(dnarrow.data, act_, {b, t, C}),
                                a.qkv, a.lse, attention_params(layer, b, t, false));
    if (config_.qk_norm)
        backend_.qk_norm_backward(TensorView(dqkv.data, act_, {b, t, Q}), a.qkv, a.qk_norm_rstd, config_.n_head,
                                  config_.kv_heads());
    if (recompute_ == Recompute::selective)
        norm_forward(a.attention_norm, a.residual_in, w(Role::attention_norm_weight), w(Role::attention_norm_bias));
    linear_backward_weight(layer, LinearRole::qkv, g(Role::qkv_weight), g(Role::qkv_bias), dqkv, a.attention_norm.out);
    linear_backward_input(layer, LinearRole::qkv, dnarrow, dqkv, w(Role::qkv_weight));
    norm_backward(dresidual, g(Role::attention_norm_weight), g(Role::attention_norm_bias), dnarrow, a.residual_in,
                  w(Role::attention_norm_weight), a.attention_norm);
}

}  // namespace mixgpt
