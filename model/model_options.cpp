#include "model/model_options.h"

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

// An option of a family setting, given for a family that does not read it, is refused.
void require_read(const Family& family, Setting setting, bool given, const char* option) {
    MIXGPT_REQUIRE(!given || reads_setting(family, setting),
                   format("%s: applies to --arch llama, not to --arch %s", option, family.name));
}

}  // namespace

ModelOptions with_recipe(const ModelOptions& options) {
    if (options.recipe.empty()) return options;
    MIXGPT_REQUIRE(options.recipe == "nanochat", "recipe: '" + options.recipe + "' is not one of nanochat");
    // nanochat's model (and the speedrun's): rotary positions, no biases, an untied head; QK-norm,
    // ReLU², parameter-free RMSNorm, a norm after the embeddings, logits capped at 15, the output
    // projections and head starting at zero and the rest by the fan-in rule.
    ModelOptions filled = options;
    filled.arch = "llama";
    const auto fill = [](std::string& value, const char* recipe_value) {
        if (value.empty()) value = recipe_value;
    };
    fill(filled.tie_embeddings, "false");
    fill(filled.mlp, "relu2");
    fill(filled.norm_weights, "false");
    fill(filled.zero_init, "proj,head");
    fill(filled.init, "fan-in");
    if (filled.logit_softcap == 0) filled.logit_softcap = 15;
    filled.embedding_norm = true;
    filled.qk_norm = true;
    return filled;
}

GPTConfig model_config(const ModelOptions& given, int vocab_size, int seq_len, int32_t end_of_text) {
    const ModelOptions options = with_recipe(given);
    GPTConfig config = GPTConfig::preset(options.preset, vocab_size, seq_len, parse_arch(options.arch));
    if (options.n_layer > 0) config.n_layer = options.n_layer;
    if (options.n_head > 0) config.n_head = options.n_head;
    if (options.n_embd > 0) config.n_embd = options.n_embd;
    const Family& family = config.family();
    require_read(family, Setting::n_kv_head, options.n_kv_head != 0, "n-kv-head");
    require_read(family, Setting::ffn_hidden, options.ffn_hidden != 0, "ffn-hidden");
    require_read(family, Setting::ffn_hidden, options.ffn_multiplier != 0, "ffn-multiplier");
    require_read(family, Setting::norm_epsilon, options.rms_norm_eps != 0, "rms-norm-eps");
    require_read(family, Setting::rope_theta, options.rope_theta != 0, "rope-theta");
    require_read(family, Setting::tie_embeddings, !options.tie_embeddings.empty(), "tie-embeddings");
    if (!options.mlp.empty()) {
        const MlpKind mlp = parse_mlp(options.mlp);
        MIXGPT_REQUIRE(family_allows_mlp(family, mlp),
                       format("mlp: %s is not an MLP of --arch %s (%s, its own, or relu2)", options.mlp.c_str(),
                              family.name, mlp_name(family.mlp)));
        if (mlp != family.mlp) config.mlp = mlp;
        MIXGPT_REQUIRE(options.ffn_multiplier == 0 || mlp == family.mlp,
                       format("ffn-multiplier: scales --arch %s's %s width rule; --mlp %s is 4 * width unless "
                              "--ffn-hidden",
                              family.name, mlp_name(family.mlp), options.mlp.c_str()));
    }
    MIXGPT_REQUIRE(options.n_kv_head >= 0, "n-kv-head: must not be negative");
    MIXGPT_REQUIRE(options.ffn_hidden >= 0, "ffn-hidden: must not be negative");
    MIXGPT_REQUIRE(!(options.ffn_hidden > 0 && options.ffn_multiplier != 0),
                   "ffn-multiplier: give --ffn-hidden or --ffn-multiplier, not both");
    MIXGPT_REQUIRE(options.ffn_multiplier == 0 || (std::isfinite(options.ffn_multiplier) && options.ffn_multiplier > 0),
                   "ffn-multiplier: must be a positive number");
    MIXGPT_REQUIRE(options.rms_norm_eps == 0 || (std::isfinite(options.rms_norm_eps) && options.rms_norm_eps > 0),
                   "rms-norm-eps: must be a positive number");
    MIXGPT_REQUIRE(options.rope_theta == 0 || (std::isfinite(options.rope_theta) && options.rope_theta > 1),
                   "rope-theta: must be a number above 1");
    MIXGPT_REQUIRE(
        options.logit_softcap == 0 || (std::isfinite(options.logit_softcap) && options.logit_softcap > 0),
        "logit-softcap: must be a positive finite number");
    MIXGPT_REQUIRE(options.tie_embeddings.empty() || options.tie_embeddings == "true" ||
                       options.tie_embeddings == "false",
                   "tie-embeddings: '" + options.tie_embeddings + "', expected true or false");
    MIXGPT_REQUIRE(options.norm_weights.empty() || options.norm_weights == "true" || options.norm_weights == "false",
                   "norm-weights: '" + options.norm_weights + "', expected true or false");
    MIXGPT_REQUIRE(options.n_kv_head == 0 || (config.n_head % options.n_kv_head == 0),
                   format("n-kv-head: %d does not divide the %d heads", options.n_kv_head, config.n_head));
    if (reads_setting(family, Setting::n_kv_head)) config.n_kv_head = options.n_kv_head > 0 ? options.n_kv_head : config.n_head;
    if (reads_setting(family, Setting::ffn_hidden))
        config.ffn_hidden = options.ffn_hidden > 0
                                ? options.ffn_hidden
                                : default_mlp_hidden(family, config.mlp_kind(), config.n_embd,
                                                     options.ffn_multiplier > 0 ? options.ffn_multiplier : 1.0);
    if (options.rms_norm_eps > 0) config.norm_epsilon = static_cast<float>(options.rms_norm_eps);
    if (options.rope_theta > 0) config.rope_theta = static_cast<float>(options.rope_theta);
    if (!options.tie_embeddings.empty()) config.tie_embeddings = options.tie_embeddings == "true";
    config.logit_softcap = static_cast<float>(options.logit_softcap);
    config.norm_weights = options.norm_weights != "false";
    config.embedding_norm = options.embedding_norm;
    config.qk_norm = options.qk_norm;
    if (!options.init.empty()) config.init = parse_init_scheme(options.init);
    if (!options.zero_init.empty() && options.zero_init != "none") {
        std::stringstream names(options.zero_init);
        for (std::string name; std::getline(names, name, ',');) {
            MIXGPT_REQUIRE(name == "proj" || name == "head",
                           "zero-init: '" + name + "' is not proj or head (a comma-separated list, or none)");
            (name == "proj" ? config.zero_init_projections : config.zero_init_head) = true;
        }
        MIXGPT_REQUIRE(!config.zero_init_head || !config.tie_embeddings,
                       format("zero-init: head needs an output head of its own (--arch llama --tie-embeddings "
                              "false); --arch %s's head is the token embedding, which would start at zero",
                              family.name));
    }
    MIXGPT_REQUIRE(options.attention_mask.empty() || options.attention_mask == "causal" ||
                       options.attention_mask == "document",
                   "attention-mask: '" + options.attention_mask + "', expected causal or document");
    MIXGPT_REQUIRE(options.window >= 0, "window: must not be negative (0: the whole context)");
    MIXGPT_REQUIRE(options.window_pattern.empty() || options.window > 0,
                   "window-pattern: says which layers --window holds for; give --window W with it");
    MIXGPT_REQUIRE(options.window_pattern.find_first_not_of("LS") == std::string::npos,
                   "window-pattern: '" + options.window_pattern +
                       "', expected letters L (whole context) and S (windowed), one per layer, cycled");
    config.attention_window = options.window;
    config.set_window_pattern(options.window_pattern);
    if (options.attention_mask == "document") {
        MIXGPT_REQUIRE(
            end_of_text >= 0 && end_of_text < vocab_size,
            "attention-mask: document needs the documents of a prepared dataset (its end-of-text token)");
        config.document_separator = end_of_text;
    }
    MIXGPT_REQUIRE(options.positions.empty() || options.positions == "absolute" || options.positions == "document",
                   "positions: '" + options.positions + "', expected absolute or document");
    config.document_positions = options.positions == "document";
    MIXGPT_REQUIRE(!config.document_positions || options.attention_mask == "document",
                   "positions: document needs --attention-mask document (positions that restart while attention "
                   "crosses documents would place one document's tokens after the next one's)");
    config.validate();
    return config;
}

std::vector<std::pair<std::string, std::string>> describe_model_options(const ModelOptions& options_given) {
    // The recipe as the options it stands for, so that a command rebuilt from them is the same model.
    const ModelOptions options = with_recipe(options_given);
    const auto integer = [](int value) { return std::to_string(value); };
    // The family settings: "" when not given (the family's default), so that a rebuilt command line
    // (interop/model_card.cpp) leaves them out.
    const auto given = [](double value) { return value != 0 ? format("%.17g", value) : std::string(); };
    return {
        {"model", options.preset},
        {"arch", options.arch},
        {"n_layer", integer(options.n_layer)},
        {"n_head", integer(options.n_head)},
        {"n_embd", integer(options.n_embd)},
        {"n_kv_head", given(options.n_kv_head)},
        {"ffn_hidden", given(options.ffn_hidden)},
        {"ffn_multiplier", given(options.ffn_multiplier)},
        {"rms_norm_eps", given(options.rms_norm_eps)},
        {"rope_theta", given(options.rope_theta)},
        {"tie_embeddings", options.tie_embeddings},
        {"logit_softcap", given(options.logit_softcap)},
        {"mlp", options.mlp},
        {"norm_weights", options.norm_weights},
        {"zero_init", options.zero_init},
        {"embedding_norm", options.embedding_norm ? "true" : ""},
        {"qk_norm", options.qk_norm ? "true" : ""},
        {"init", options.init},
        {"attention_mask", options.attention_mask},
        {"positions", options.positions},
        {"window", options.window > 0 ? std::to_string(options.window) : std::string()},
        {"window_pattern", options.window_pattern},
    };
}

}  // namespace mixgpt
