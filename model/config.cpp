#include "model/config.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {

bool GPTConfig::holds(const TensorSpec& spec) const {
    switch (spec.presence) {
        case Presence::always:
            return true;
        case Presence::untied_head:
            return !tie_embeddings;
        case Presence::norm_weight:
            return norm_weights;
        case Presence::embedding_norm_weight:
            return embedding_norm && norm_weights;
    }
    return false;
}

Init GPTConfig::initialisation(Role role, Init init) const {
    if (zero_init_projections && init == Init::residual_normal) return Init::zeros;
    if (zero_init_head && role == Role::output_head) return Init::zeros;
    return init;
}

std::string GPTConfig::zero_init_name() const {
    if (zero_init_projections && zero_init_head) return "proj,head";
    return zero_init_projections ? "proj" : zero_init_head ? "head" : "none";
}

int GPTConfig::padded_vocab_size() const { return (vocab_size + 127) / 128 * 128; }

int GPTConfig::head_dim() const { return n_embd / n_head; }

int GPTConfig::kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }

int GPTConfig::mlp_hidden() const {
    return ffn_hidden > 0 ? ffn_hidden : default_mlp_hidden(family(), mlp_kind(), n_embd, 1.0);
}

int64_t GPTConfig::size_of(Dim dim) const {
    switch (dim) {
        case Dim::none:
            return 1;
        case Dim::embd:
            return n_embd;
        case Dim::padded_vocab:
            return padded_vocab_size();
        case Dim::positions:
            return max_seq_len;
        case Dim::qkv:
            return int64_t{n_head + 2 * kv_heads()} * head_dim();
        case Dim::mlp_input:
            return (mlp_kind() == MlpKind::swiglu ? 2 : 1) * int64_t{mlp_hidden()};
        case Dim::mlp_hidden:
            return mlp_hidden();
    }
    return 0;
}

GPTConfig GPTConfig::preset(const std::string& name, int vocab_size, int max_seq_len, Arch arch) {
    for (int depth : {2, 6, 12, 24, 36, 48}) {
        if (name != "d" + std::to_string(depth)) continue;
        GPTConfig config;
        config.arch = arch;
        config.n_layer = depth;
        config.n_head = depth;
        config.n_embd = 64 * depth;
        config.vocab_size = vocab_size;
        config.max_seq_len = max_seq_len;
        return config;
    }
    throw Error("unknown model preset '" + name + "' (expected d2, d6, d12, d24, d36 or d48)");
}

void GPTConfig::set_window_pattern(const std::string& pattern) {
    MIXGPT_REQUIRE(pattern.size() <= kMaxWindowPattern,
                   format("window-pattern: '%s' has %zu letters, at most %zu (it repeats over the layers)",
                          pattern.c_str(), pattern.size(), kMaxWindowPattern));
    window_pattern.fill('\0');
    std::copy(pattern.begin(), pattern.end(), window_pattern.begin());
}

int GPTConfig::window_of(int layer) const {
    const std::string pattern = window_pattern_text();
    if (pattern.empty()) return attention_window;
    return pattern[static_cast<size_t>(layer) % pattern.size()] == 'S' ? attention_window : 0;
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
    MIXGPT_REQUIRE(attention_window >= 0,
                   format("model config: attention_window is %d, expected 0 (none) or more", attention_window));
    const std::string pattern = window_pattern_text();
    MIXGPT_REQUIRE(pattern.empty() || attention_window > 0,
                   "model config: window_pattern '" + pattern + "' without an attention_window");
    MIXGPT_REQUIRE(pattern.find_first_not_of("LS") == std::string::npos,
                   "model config: window_pattern '" + pattern +
                       "' is not made of L (whole context) and S (windowed), one letter per layer");
    MIXGPT_REQUIRE(document_separator >= -1 && document_separator < vocab_size,
                   format("model config: document_separator %d is not a token of the %d (-1: none)",
                          document_separator, vocab_size));
    MIXGPT_REQUIRE(!document_positions || document_separator >= 0,
                   "model config: document_positions needs the document mask (a document_separator)");
    MIXGPT_REQUIRE(n_embd % n_head == 0,
                   format("model config: n_embd %d is not a multiple of n_head %d", n_embd, n_head));
    MIXGPT_REQUIRE(vocab_size <= (1 << 30), format("model config: vocab_size %d is too large", vocab_size));
    MIXGPT_REQUIRE(n_kv_head >= 0 && n_head % kv_heads() == 0,
                   format("model config: n_kv_head %d does not divide n_head %d", n_kv_head, n_head));
    MIXGPT_REQUIRE(ffn_hidden >= 0, format("model config: ffn_hidden is %d, expected >= 0", ffn_hidden));
    const Family& own = family();
    const auto refuse_unless_read = [&](Setting setting, bool neutral, const std::string& value) {
        MIXGPT_REQUIRE(neutral || reads_setting(own, setting),
                       format("model config: %s is %s; architecture %s has no such setting", setting_name(setting),
                              value.c_str(), own.name));
    };
    refuse_unless_read(Setting::n_kv_head, kv_heads() == n_head, std::to_string(n_kv_head));
    refuse_unless_read(Setting::ffn_hidden, ffn_hidden == 0 || ffn_hidden == 4 * n_embd,
                       std::to_string(ffn_hidden));
    refuse_unless_read(Setting::norm_epsilon, norm_epsilon == 1e-5f, format("%g", static_cast<double>(norm_epsilon)));
    refuse_unless_read(Setting::tie_embeddings, tie_embeddings, "false");
    MIXGPT_REQUIRE(family_allows_mlp(own, mlp_kind()),
                   format("model config: mlp is %s; architecture %s's MLP is %s or relu2", mlp_name(mlp_kind()),
                          own.name, mlp_name(own.mlp)));
    MIXGPT_REQUIRE(!zero_init_head || !tie_embeddings,
                   "model config: zero_init head needs an output head of its own (tie_embeddings false): the tied "
                   "head is the token embedding, which would start at zero");
    MIXGPT_REQUIRE(init != InitScheme::fan_in || !tie_embeddings,
                   "model config: init fan-in needs an output head of its own (tie_embeddings false): it starts the "
                   "token embedding at N(0, 1), which a tied head would turn into logits of scale sqrt(n_embd)");
    MIXGPT_REQUIRE(std::isfinite(logit_softcap) && logit_softcap >= 0,
                   format("model config: logit_softcap is %g, expected a positive number or 0 (off)",
                          static_cast<double>(logit_softcap)));
    if (own.norm == NormKind::rmsnorm)
        MIXGPT_REQUIRE(std::isfinite(norm_epsilon) && norm_epsilon > 0,
                       format("model config: norm_epsilon is %g, expected a positive number",
                              static_cast<double>(norm_epsilon)));
    if (own.positions == PositionKind::rotary) {
        MIXGPT_REQUIRE(std::isfinite(rope_theta) && rope_theta > 1,
                       format("model config: rope_theta is %g, expected a number above 1",
                              static_cast<double>(rope_theta)));
        MIXGPT_REQUIRE(head_dim() % 2 == 0,
                       format("model config: head_dim %d (n_embd / n_head) is odd; RoPE rotates pairs", head_dim()));
    }
}

int64_t GPTConfig::num_parameters() const {
    const Family& own = family();
    const auto real_count = [&](const TensorSpec& spec) {
        const int64_t rows = spec.rows == Dim::padded_vocab ? vocab_size : size_of(spec.rows);
        return rows * size_of(spec.cols);
    };
    int64_t count = 0;
    for (const TensorSpec& spec : own.model_tensors)
        if (holds(spec)) count += real_count(spec);
    for (const TensorSpec& spec : own.block_tensors)
        if (holds(spec)) count += n_layer * real_count(spec);
    return count;
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
