#include "model/family.h"

#include <algorithm>

#include "core/error.h"

namespace mixgpt {
namespace {

bool has_role(const std::vector<TensorSpec>& tensors, Role role) {
    return std::any_of(tensors.begin(), tensors.end(), [role](const TensorSpec& spec) { return spec.role == role; });
}

}  // namespace

const Family& family_of(Arch arch) {
    switch (arch) {
        case Arch::gpt2:
            return gpt2_family();
        case Arch::llama:
            return llama_family();
    }
    throw Error("unknown model family");
}

Arch parse_arch(const std::string& name) {
    for (Arch arch : {Arch::gpt2, Arch::llama})
        if (name == family_of(arch).name) return arch;
    throw Error("unknown architecture '" + name + "' (expected gpt2 or llama)");
}

bool is_block_role(Role role) { return static_cast<int>(role) >= static_cast<int>(Role::attention_norm_weight); }

const char* arch_name(Arch arch) { return family_of(arch).name; }

bool reads_setting(const Family& family, Setting setting) {
    return std::find(family.settings.begin(), family.settings.end(), setting) != family.settings.end();
}

const char* setting_name(Setting setting) {
    switch (setting) {
        case Setting::n_kv_head:
            return "n_kv_head";
        case Setting::ffn_hidden:
            return "ffn_hidden";
        case Setting::norm_epsilon:
            return "norm_epsilon";
        case Setting::rope_theta:
            return "rope_theta";
        case Setting::tie_embeddings:
            return "tie_embeddings";
        case Setting::logit_softcap:
            return "logit_softcap";
        case Setting::mlp:
            return "mlp";
        case Setting::norm_weights:
            return "norm_weights";
        case Setting::zero_init:
            return "zero_init";
        case Setting::embedding_norm:
            return "embedding_norm";
        case Setting::qk_norm:
            return "qk_norm";
        case Setting::init:
            return "init";
    }
    return "unknown";
}

const char* mlp_name(MlpKind mlp) {
    switch (mlp) {
        case MlpKind::gelu:
            return "gelu";
        case MlpKind::swiglu:
            return "swiglu";
        case MlpKind::relu2:
            return "relu2";
    }
    return "unknown";
}

MlpKind parse_mlp(const std::string& name) {
    for (MlpKind mlp : {MlpKind::gelu, MlpKind::swiglu, MlpKind::relu2})
        if (name == mlp_name(mlp)) return mlp;
    throw Error("unknown MLP '" + name + "' (expected gelu, swiglu or relu2)");
}

const char* init_scheme_name(InitScheme scheme) { return scheme == InitScheme::fan_in ? "fan-in" : "gpt2"; }

InitScheme parse_init_scheme(const std::string& name) {
    for (InitScheme scheme : {InitScheme::gpt2, InitScheme::fan_in})
        if (name == init_scheme_name(scheme)) return scheme;
    throw Error("unknown init '" + name + "' (expected gpt2 or fan-in)");
}

int default_mlp_hidden(const Family& family, MlpKind mlp, int n_embd, double multiplier) {
    return mlp == family.mlp ? family.default_ffn_hidden(n_embd, multiplier) : 4 * n_embd;
}

bool family_allows_mlp(const Family& family, MlpKind mlp) {
    return mlp == family.mlp || std::find(family.other_mlps.begin(), family.other_mlps.end(), mlp) !=
                                    family.other_mlps.end();
}

void check_family(const Family& family) {
    const std::string where = std::string("model family ") + family.name + ": ";
    std::vector<bool> seen(kRoleCount, false);
    for (const auto* list : {&family.model_tensors, &family.block_tensors})
        for (const TensorSpec& spec : *list) {
            const auto index = static_cast<size_t>(spec.role);
            MIXGPT_REQUIRE(!seen[index], where + spec.name + " repeats a role");
            seen[index] = true;
        }
    for (const TensorSpec& spec : family.model_tensors)
        MIXGPT_REQUIRE(!is_block_role(spec.role), where + spec.name + " is a block's role");
    for (const TensorSpec& spec : family.block_tensors)
        MIXGPT_REQUIRE(is_block_role(spec.role), where + spec.name + " is a model-level role");
    const auto model_has = [&](Role role) { return has_role(family.model_tensors, role); };
    const auto block_has = [&](Role role) { return has_role(family.block_tensors, role); };
    const bool layernorm = family.norm == NormKind::layernorm;
    for (Role weight : {Role::attention_norm_weight, Role::mlp_norm_weight, Role::qkv_weight,
                        Role::attention_output_weight, Role::mlp_input_weight, Role::mlp_output_weight})
        MIXGPT_REQUIRE(block_has(weight), where + "a block lacks one of its weights");
    MIXGPT_REQUIRE(model_has(Role::token_embedding) && model_has(Role::final_norm_weight),
                   where + "the token embedding or the final norm is missing");
    MIXGPT_REQUIRE(block_has(Role::attention_norm_bias) == layernorm && block_has(Role::mlp_norm_bias) == layernorm &&
                       model_has(Role::final_norm_bias) == layernorm &&
                       model_has(Role::embedding_norm_bias) == layernorm && model_has(Role::embedding_norm_weight),
                   where + "norm biases go with LayerNorm, and only with it");
    MIXGPT_REQUIRE(model_has(Role::position_embedding) == (family.positions == PositionKind::learned),
                   where + "a position table goes with learned positions, and only with them");
    MIXGPT_REQUIRE(family_allows_mlp(family, MlpKind::gelu) == (family.mlp == MlpKind::gelu) &&
                       family_allows_mlp(family, MlpKind::swiglu) == (family.mlp == MlpKind::swiglu),
                   where + "GELU and SwiGLU are a family's own MLP, never another's choice");
    MIXGPT_REQUIRE(family.mlp != MlpKind::gelu || block_has(Role::mlp_input_bias),
                   where + "the GELU MLP's product needs its bias (the fused epilogue adds one)");
    MIXGPT_REQUIRE(reads_setting(family, Setting::mlp) && reads_setting(family, Setting::norm_weights) &&
                       reads_setting(family, Setting::zero_init) && reads_setting(family, Setting::embedding_norm) &&
                       reads_setting(family, Setting::qk_norm) && reads_setting(family, Setting::init),
                   where + "every family reads the mlp, norm_weights, zero_init, embedding_norm, qk_norm and init "
                           "settings");
    for (const auto* list : {&family.model_tensors, &family.block_tensors})
        for (const TensorSpec& spec : *list) {
            const bool norm = spec.role == Role::final_norm_weight || spec.role == Role::final_norm_bias ||
                              spec.role == Role::attention_norm_weight || spec.role == Role::attention_norm_bias ||
                              spec.role == Role::mlp_norm_weight || spec.role == Role::mlp_norm_bias;
            const bool embedding_norm =
                spec.role == Role::embedding_norm_weight || spec.role == Role::embedding_norm_bias;
            MIXGPT_REQUIRE(norm == (spec.presence == Presence::norm_weight) &&
                               embedding_norm == (spec.presence == Presence::embedding_norm_weight),
                           where + spec.name + ": norm tensors, and only they, are present with norm weights");
        }
    MIXGPT_REQUIRE(!model_has(Role::output_head) || reads_setting(family, Setting::tie_embeddings),
                   where + "an output head of its own needs the tie_embeddings setting");
}

}  // namespace mixgpt
