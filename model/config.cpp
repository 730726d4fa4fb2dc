#include "model/config.h"

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {

int GPTConfig::padded_vocab_size() const { return (vocab_size + 127) / 128 * 128; }

int GPTConfig::head_dim() const { return n_embd / n_head; }

GPTConfig GPTConfig::preset(const std::string& name, int vocab_size, int max_seq_len) {
    for (int depth : {2, 6, 12, 24, 36, 48}) {
        if (name != "d" + std::to_string(depth)) continue;
        GPTConfig config;
        config.n_layer = depth;
        config.n_head = depth;
        config.n_embd = 64 * depth;
        config.vocab_size = vocab_size;
        config.max_seq_len = max_seq_len;
        return config;
    }
    throw Error("unknown model preset '" + name + "' (expected d2, d6, d12, d24, d36 or d48)");
}

void GPTConfig::validate() const {
    auto require_positive = [](const char* field, int value) {
        MIXGPT_REQUIRE(value > 0, format("model config: %s is %d, expected a positive number", field, value));
    };
    require_positive("n_layer", n_layer);
    require_positive("n_head", n_head);
    require_positive("n_embd", n_embd);
    require_positive("vocab_size", vocab_size);
    require_positive("max_seq_len", max_seq_len);
    MIXGPT_REQUIRE(n_embd % n_head == 0,
                   format("model config: n_embd %d is not a multiple of n_head %d", n_embd, n_head));
    MIXGPT_REQUIRE(vocab_size <= (1 << 30), format("model config: vocab_size %d is too large", vocab_size));
}

int64_t GPTConfig::num_parameters() const {
    const int64_t C = n_embd;
    const int64_t per_layer = 12 * C * C + 13 * C;  // ln_1, c_attn, attn c_proj, ln_2, c_fc, mlp c_proj
    return int64_t{vocab_size} * C + int64_t{max_seq_len} * C + n_layer * per_layer + 2 * C;
}

Recompute parse_recompute(const std::string& name) {
    if (name == "none") return Recompute::none;
    if (name == "selective") return Recompute::selective;
    if (name == "full") return Recompute::full;
    throw Error("unknown recompute policy '" + name + "' (expected none, selective or full)");
}

const char* recompute_name(Recompute recompute) {
    switch (recompute) {
        case Recompute::none:
            return "none";
        case Recompute::selective:
            return "selective";
        case Recompute::full:
            return "full";
    }
    return "unknown";
}

}  // namespace mixgpt
