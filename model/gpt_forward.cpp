// The forward pass and the loss; forward_backward hands over to gpt_backward.cpp.
#include "core/error.h"
#include "model/gpt.h"

namespace mixgpt {

void GPT::forward_blocks(TensorView tokens, int cache_position) {
    const int64_t b = tokens.dim(0), t = tokens.dim(1), C = config_.n_embd;
    // wpe seen from row `position` on, so position t of the batch reads wpe[position + t].
    const int64_t position = cache_position < 0 ? 0 : cache_position;
    const TensorView wpe(
        static_cast<char*>(weights_.wpe.data) + static_cast<size_t>(position * C) * dtype_size(act_), act_,
        {config_.max_seq_len - position, C});
    backend_.embedding_forward(activation("residual", 0, {b, t, C}), tokens, weights_.wte, wpe);
    const BlockActivations first = block_activations(0, b, t);
    const BlockTensors& w0 = weights_.blocks[0];
    backend_.layernorm_forward(first.ln1, first.ln1_mean, first.ln1_rstd, first.residual_in, w0.ln_1_weight,
                               w0.ln_1_bias);
    for (int l = 0; l < config_.n_layer; ++l) {
        const BlockActivations a = block_activations(l, b, t);
        block_forward_to_gelu(l, a, cache_position);
        block_forward_finish(l, a, next_norm(l, b, t));
    }
}

void GPT::block_forward_to_gelu(int layer, const BlockActivations& a, int cache_position) {
    const BlockTensors& w = weights_.blocks[static_cast<size_t>(layer)];
    const int64_t b = a.qkv.dim(0), t = a.qkv.dim(1), N = b * t, C = config_.n_embd;
    const TensorView qkv_rows(a.qkv.data, act_, {N, 3 * C});          // (N, 3C)
    const TensorView attention_rows(a.attention.data, act_, {N, C});  // (N, C)
    const TensorView branch = activation("branch", 0, {N, C});        // (N, C)
    backend_.matmul_forward(qkv_rows, TensorView(), a.ln1, w.c_attn_weight, w.c_attn_bias,
                            MatmulEpilogue::bias);
    if (cache_position < 0) {
        backend_.attention_forward(a.attention, a.lse, a.qkv, multi_head_attention(config_.n_head));
    } else {
        const int64_t cache_layer = static_cast<int64_t>(layer) * batch_size_ * config_.max_seq_len * C;
        const size_t offset = static_cast<size_t>(cache_layer) * dtype_size(act_);
        const TensorView k(static_cast<char*>(k_cache_.data) + offset, act_, {b, config_.max_seq_len, C});
        const TensorView v(static_cast<char*>(v_cache_.data) + offset, act_, {b, config_.max_seq_len, C});
        backend_.attention_forward_cached(a.attention, a.qkv, k, v, cache_position,
                                          multi_head_attention(config_.n_head));
    }
    backend_.matmul_forward(branch, TensorView(), attention_rows, w.attn_proj_weight, w.attn_proj_bias,
                            MatmulEpilogue::bias);
    backend_.residual_layernorm_forward(a.residual2, a.ln2, a.ln2_mean, a.ln2_rstd, a.residual_in, branch,
                                        w.ln_2_weight, w.ln_2_bias);
    backend_.matmul_forward(a.fc_gelu, a.fc, a.ln2, w.c_fc_weight, w.c_fc_bias, MatmulEpilogue::bias_gelu);
}

void GPT::block_forward_finish(int layer, const BlockActivations& a, const NextNorm& next) {
    const BlockTensors& w = weights_.blocks[static_cast<size_t>(layer)];
    const TensorView branch = activation("branch", 0, {a.residual2.dim(0), config_.n_embd});  // (N, C)
    backend_.matmul_forward(branch, TensorView(), a.fc_gelu, w.mlp_proj_weight, w.mlp_proj_bias,
                            MatmulEpilogue::bias);
    backend_.residual_layernorm_forward(a.residual_out, next.out, next.mean, next.rstd, a.residual2, branch,
                                        next.weight, next.bias);
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
    const TensorView logits = activation("logits", 0, {N, Vp});
    backend_.matmul_forward(logits, TensorView(), activation("lnf", 0, {N, C}), weights_.wte, TensorView(),
                            MatmulEpilogue::none);
    const TensorView target_rows(targets.data, targets.dtype, {N});
    backend_.classifier(activation("losses", 0, {N}), logits, target_rows, config_.vocab_size,
                        compute_gradient, gradient_scale, status);
}

TensorView GPT::forward(TensorView tokens, TensorView targets) {
    forward_pass(tokens, targets, false, 1.f, nullptr);
    return activation("losses", 0, {tokens.dim(0), tokens.dim(1)});
}

TensorView GPT::forward_backward(TensorView tokens, TensorView targets, float gradient_scale,
                                 const StepStatus* status, const GradientsReady& ready) {
    forward_pass(tokens, targets, true, gradient_scale, status);
    backward_pass(tokens, ready);
    return activation("losses", 0, {tokens.dim(0), tokens.dim(1)});
}

}  // namespace mixgpt
