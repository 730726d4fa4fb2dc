// The forward pass and the loss, the family's step variants (model/family.h) chosen in the
// helpers at the top; forward_backward hands over to gpt_backward.cpp.
#include "core/error.h"
#include "model/gpt.h"

namespace mixgpt {
void GPT::norm_forward(const NormViews& out, TensorView inp, TensorView weight, TensorView bias) {
    if (family_.norm == NormKind::layernorm)
        backend_.layernorm_forward(out.out, out.mean, out.rstd, inp, weight, bias);
    else
        backend_.rmsnorm_forward(out.out, out.rstd, inp, weight, config_.norm_epsilon);
}

void GPT::residual_norm_forward(TensorView residual_out, const NormViews& out, TensorView residual_in,
                                TensorView branch, TensorView weight, TensorView bias) {
    if (family_.norm == NormKind::layernorm)
        backend_.residual_layernorm_forward(residual_out, out.out, out.mean, out.rstd, residual_in, branch,
                                            weight, bias);
    else
        backend_.residual_rmsnorm_forward(residual_out, out.out, out.rstd, residual_in, branch, weight,
                                          config_.norm_epsilon);
}

void GPT::mlp_activation_forward(TensorView out, TensorView inp) {
    switch (config_.mlp_kind()) {
        case MlpKind::gelu:
            backend_.gelu_forward(out, inp);
            break;
        case MlpKind::swiglu:
            backend_.swiglu_forward(out, inp);
            break;
        case MlpKind::relu2:
            backend_.relu2_forward(out, inp);
            break;
    }
}

void GPT::forward_blocks(TensorView tokens, int cache_position) {
    const int64_t b = tokens.dim(0), t = tokens.dim(1), C = config_.n_embd;
    TensorView positions = weights_[Role::position_embedding];
    const TensorView document_positions = this->document_positions(b, t);  // invalid: rows t
    if (positions.valid() && cache_position > 0 && !document_positions.valid()) {
        // The table seen from row `cache_position` on, so position t of the batch reads row
        // cache_position + t.
        const int64_t rows = config_.max_seq_len - cache_position;
        positions = TensorView(static_cast<char*>(positions.data) +
                                   static_cast<size_t>(cache_position * C) * dtype_size(act_),
                               act_, {rows, C});
    }
    find_documents(tokens, cache_position);
    // x_0 (b, t, C): the embeddings, or their norm under --embedding-norm (its input kept for backward).
    const Activation embedded = config_.embedding_norm ? Activation::embedding : Activation::residual;
    backend_.embedding_forward(activation(embedded, 0, {b, t, C}), tokens, weights_[Role::token_embedding],
                               positions, document_positions);
    if (config_.embedding_norm)
        norm_forward(embedding_norm_views(b * t), activation(Activation::embedding, 0, {b * t, C}),
                     weights_[Role::embedding_norm_weight], weights_[Role::embedding_norm_bias]);
    const BlockActivations first = block_activations(0, b, t);
    norm_forward(first.attention_norm, first.residual_in, weights_.block(0, Role::attention_norm_weight),
                 weights_.block(0, Role::attention_norm_bias));
    for (int l = 0; l < config_.n_layer; ++l) {
        const BlockActivations a = block_activations(l, b, t);
        block_forward_to_mlp_hidden(l, a, cache_position);
        block_forward_finish(l, a, next_norm(l, b, t));
        if (statistics_.block_outputs == nullptr) continue;
        backend_.tensor_statistics(statistics_.block_outputs + l, a.residual_out, TensorView(), statistics_.small);
        backend_.tensor_statistics(statistics_.attention_lse + l, a.lse, TensorView(), statistics_.small);
        uint64_t* bins = statistics_.output_exponents + static_cast<size_t>(l) * kExponentBins;
        backend_.fill_zero(bins, kExponentBins * sizeof(uint64_t));
        backend_.exponent_histogram(bins, a.residual_out);
    }
}

void GPT::block_forward_to_mlp_hidden(int layer, const BlockActivations& a, int cache_position) {
    const auto w = [&](Role role) { return weights_.block(layer, role); };
    const int64_t b = a.qkv.dim(0), t = a.qkv.dim(1), N = b * t, C = config_.n_embd;
    const TensorView qkv_rows(a.qkv.data, act_, {N, a.qkv.dim(2)});     // (N, Q)
    const TensorView attention_rows(a.attention.data, act_, {N, C});     // (N, C)
    const TensorView branch = activation(Activation::branch, 0, {N, C});  // (N, C)
    linear_forward(layer, LinearRole::qkv, qkv_rows, a.attention_norm.out, w(Role::qkv_weight), w(Role::qkv_bias));
    if (config_.qk_norm)
        backend_.qk_norm_forward(a.qkv, a.qk_norm_rstd, config_.n_head, config_.kv_heads(), config_.norm_epsilon);
    if (cache_position < 0) {
        backend_.attention_forward(a.attention, a.lse, a.qkv, attention_params(layer, b, t, false));
    } else {
        const int64_t kv_width = int64_t{config_.kv_heads()} * config_.head_dim();
        const int64_t cache_layer = static_cast<int64_t>(layer) * batch_size_ * config_.max_seq_len * kv_width;
        const size_t offset = static_cast<size_t>(cache_layer) * dtype_size(act_);
        const TensorView k(static_cast<char*>(k_cache_.data) + offset, act_, {b, config_.max_seq_len, kv_width});
        const TensorView v(static_cast<char*>(v_cache_.data) + offset, act_, {b, config_.max_seq_len, kv_width});
        backend_.attention_forward_cached(a.attention, a.qkv, k, v, cache_position, attention_params(layer, b, t, true));
    }
    linear_forward(layer, LinearRole::attention_output, branch, attention_rows, w(Role::attention_output_weight),
                   w(Role::attention_output_bias));
    residual_norm_forward(a.attention_residual, a.mlp_norm, a.residual_in, branch, w(Role::mlp_norm_weight),
                          w(Role::mlp_norm_bias));
    if (config_.mlp_kind() == MlpKind::gelu && !linear_in_fp8(layer, LinearRole::mlp_input)) {
        backend_.matmul_forward(a.mlp_hidden, a.mlp_input, a.mlp_norm.out, w(Role::mlp_input_weight),
                                w(Role::mlp_input_bias), MatmulEpilogue::bias_gelu);
    } else {  // the FP8 product has no GELU epilogue: gelu_forward of the stored product, as recomputation does
        linear_forward(layer, LinearRole::mlp_input, a.mlp_input, a.mlp_norm.out, w(Role::mlp_input_weight),
                       w(Role::mlp_input_bias));
        mlp_activation_forward(a.mlp_hidden, a.mlp_input);
    }
}

void GPT::block_forward_finish(int layer, const BlockActivations& a, const NextNorm& next) {
    const TensorView branch = activation(Activation::branch, 0, {a.attention_residual.dim(0), config_.n_embd});
    const TensorView bias = weights_.block(layer, Role::mlp_output_bias);
    linear_forward(layer, LinearRole::mlp_output, branch, a.mlp_hidden, weights_.block(layer, Role::mlp_output_weight),
                   bias);
    residual_norm_forward(a.residual_out, next.views, a.attention_residual, branch, next.weight, next.bias);
}

void GPT::forward_pass(TensorView tokens, TensorView targets, bool compute_gradient, float gradient_scale,
                       const StepStatus* status) {
    check_batch(tokens, "forward: tokens");
    check_batch(targets, "forward: targets");
    MIXGPT_REQUIRE(targets.dim(0) == tokens.dim(0) && targets.dim(1) == tokens.dim(1),
                   "forward: targets and tokens differ in shape");
    const int64_t b = tokens.dim(0), t = tokens.dim(1), N = b * t, C = config_.n_embd;
    const int64_t Vp = config_.padded_vocab_size();
    last_rows_ = b;
    last_length_ = t;

    forward_blocks(tokens, -1);
    const TensorView logits = activation(Activation::logits, 0, {N, Vp});
    linear_forward(0, LinearRole::head, logits, activation(Activation::final_norm, 0, {N, C}), weights_.head(),
                   TensorView());
    if (statistics_.logits != nullptr)
        backend_.tensor_statistics(statistics_.logits, logits, TensorView(), statistics_.small);
    const TensorView target_rows(targets.data, targets.dtype, {N});
    // The z-loss is part of the training objective only (forward_backward).
    const float z_loss = compute_gradient ? z_loss_ : 0.f;
    const TensorView z_losses = z_loss > 0 ? activation(Activation::z_losses, 0, {N}) : TensorView();
    backend_.classifier(activation(Activation::losses, 0, {N}), z_losses, logits, target_rows,
                        {config_.vocab_size, config_.logit_softcap, z_loss}, compute_gradient, gradient_scale,
                        status);
}

TensorView GPT::forward(TensorView tokens, TensorView targets) {
    forward_pass(tokens, targets, false, 1.f, nullptr);
    return activation(Activation::losses, 0, {tokens.dim(0), tokens.dim(1)});
}

TensorView GPT::forward_backward(TensorView tokens, TensorView targets, float gradient_scale,
                                 const StepStatus* status, const GradientsReady& ready) {
    forward_pass(tokens, targets, true, gradient_scale, status);
    backward_pass(tokens, ready);
    return activation(Activation::losses, 0, {tokens.dim(0), tokens.dim(1)});
}

}  // namespace mixgpt
