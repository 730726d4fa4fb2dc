// Incremental forward for sampling: K and V of every earlier position are kept in a cache
// (Hkv heads: grouped-query attention shrinks it by H / Hkv; under RoPE the keys are kept rotated),
// so each new token costs one position's worth of work.
#include "core/error.h"
#include "core/log.h"
#include "model/gpt.h"

namespace mixgpt {

TensorView GPT::forward_cached(TensorView tokens, int position) {
    check_batch(tokens, "forward_cached: tokens");
    const int64_t rows = tokens.dim(0), Tn = tokens.dim(1), C = config_.n_embd;
    const int64_t kv_width = int64_t{config_.kv_heads()} * config_.head_dim();
    const int64_t Vp = config_.padded_vocab_size(), maxT = config_.max_seq_len;
    MIXGPT_REQUIRE(position >= 0 && position + Tn <= maxT,
                   format("forward_cached: positions [%d, %lld) run past max_seq_len %lld", position,
                          static_cast<long long>(position + Tn), static_cast<long long>(maxT)));
    if (cache_.empty()) {
        const int64_t cache_elements = int64_t{config_.n_layer} * batch_size_ * maxT * kv_width;
        const size_t element = dtype_size(act_);
        const int64_t elements = 2 * cache_elements + batch_size_ * C + batch_size_ * Vp;
        cache_ = backend_.allocate(static_cast<size_t>(elements) * element);
        auto* base = static_cast<char*>(cache_.data());
        k_cache_ = TensorView(base, act_, {cache_elements});
        v_cache_ = TensorView(base + cache_elements * element, act_, {cache_elements});
        last_norm_ = TensorView(base + 2 * cache_elements * element, act_, {batch_size_, C});
        cached_logits_ =
            TensorView(base + (2 * cache_elements + batch_size_ * C) * element, act_, {batch_size_, Vp});
    }

    forward_blocks(tokens, position);
    // The final-norm row of each sequence's last new position, then its logits.
    const TensorView lnf = activation(Activation::final_norm, 0, {rows * Tn, C});
    const size_t row_bytes = static_cast<size_t>(C) * dtype_size(act_);
    for (int64_t r = 0; r < rows; ++r)
        backend_.copy_within(static_cast<char*>(last_norm_.data) + static_cast<size_t>(r) * row_bytes,
                             static_cast<char*>(lnf.data) + static_cast<size_t>(r * Tn + Tn - 1) * row_bytes,
                             row_bytes);
    const TensorView logits(cached_logits_.data, act_, {rows, Vp});
    linear_forward(0, LinearRole::head, logits, TensorView(last_norm_.data, act_, {rows, C}), weights_.head(),
                   TensorView());
    if (config_.logit_softcap > 0) backend_.logit_softcap(logits, config_.vocab_size, config_.logit_softcap);
    return logits;
}

}  // namespace mixgpt
