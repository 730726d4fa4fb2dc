#include "interop/hf_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt::interop {
namespace {

using Json = nlohmann::ordered_json;

constexpr double kLayerNormEpsilon = 1e-5;  // kernels/cpu/layernorm.cpp and the CUDA kernels

// A positive integer up to `limit` (limits far above any real model, so that the parameter
// count cannot overflow and a hostile config cannot ask for an absurd allocation).
int required_int(const Json& config, const char* field, int64_t limit, const std::string& path) {
    MIXGPT_REQUIRE(config.contains(field), path + ": " + field + ": missing");
    const Json& value = config[field];
    MIXGPT_REQUIRE(value.is_number_integer() && value.get<int64_t>() > 0 && value.get<int64_t>() <= limit,
                   path + ": " + field + ": expected an integer in [1, " + std::to_string(limit) +
                       "], found " + value.dump());
    return value.get<int>();
}

// `field` must be absent (transformers' default applies) or equal `expected`.
void require_default(const Json& config, const char* field, const Json& expected, const std::string& path,
                     const std::string& reason) {
    if (!config.contains(field) || config[field].is_null() || config[field] == expected) return;
    throw Error(path + ": " + field + ": " + config[field].dump() + " is not supported (" + reason + ")");
}

// A positive finite number.
double required_number(const Json& config, const char* field, const std::string& path) {
    MIXGPT_REQUIRE(config.contains(field), path + ": " + field + ": missing");
    const Json& value = config[field];
    MIXGPT_REQUIRE(value.is_number() && std::isfinite(value.get<double>()) && value.get<double>() > 0,
                   path + ": " + field + ": expected a positive number, found " + value.dump());
    return value.get<double>();
}

// The model_type of a llama-family model's folder: qwen3 under QK-norm, mistral with a sliding
// window (every layer's: export refuses a pattern), else llama.
const char* llama_model_type(const GPTConfig& model) {
    if (model.qk_norm) return "qwen3";
    return model.attention_window > 0 ? "mistral" : "llama";
}

std::string llama_config_json(const HfModelConfig& config) {
    const GPTConfig& model = config.model;
    Json json = {{"architectures", {hf_architecture(model)}},
                       {"model_type", llama_model_type(model)},
                       {"vocab_size", model.vocab_size},
                       {"hidden_size", model.n_embd},
                       {"intermediate_size", model.mlp_hidden()},
                       {"num_hidden_layers", model.n_layer},
                       {"num_attention_heads", model.n_head},
                       {"num_key_value_heads", model.kv_heads()},
                       {"head_dim", model.head_dim()},
                       {"hidden_act", "silu"},
                       {"max_position_embeddings", model.max_seq_len},
                       {"rms_norm_eps", static_cast<double>(model.norm_epsilon)},
                       {"rope_theta", static_cast<double>(model.rope_theta)},
                       {"rope_scaling", nullptr},
                       {"attention_bias", false},
                       {"mlp_bias", false},
                       {"attention_dropout", 0.0},
                       {"pretraining_tp", 1},
                       {"initializer_range", 0.02},
                       {"tie_word_embeddings", model.tie_embeddings},
                       {"use_cache", true},
                       {"bos_token_id", config.eos_token_id},
                       {"eos_token_id", config.eos_token_id},
                       {"torch_dtype", "float32"}};
    if (model.qk_norm) {
        json.erase("pretraining_tp");
        json.erase("mlp_bias");
        json["use_sliding_window"] = false;
        json["sliding_window"] = nullptr;
    } else if (model.attention_window > 0) {  // MistralConfig: Llama's fields less these, and the window
        for (const char* field : {"pretraining_tp", "mlp_bias", "attention_bias", "rope_scaling"}) json.erase(field);
        json["sliding_window"] = model.attention_window;
    }
    return json.dump(2) + "\n";
}

// LlamaForCausalLM's (and Qwen3ForCausalLM's, MistralForCausalLM's) config.json; refuses, in one
// line, what mixgpt's llama family does not model.
HfModelConfig parse_llama_config(const Json& config, const std::string& path, const std::string& model_type) {
    const bool qwen3 = model_type == "qwen3";
    HfModelConfig result;
    GPTConfig& model = result.model;
    model.arch = Arch::llama;
    model.qk_norm = qwen3;
    model.n_layer = required_int(config, "num_hidden_layers", 1024, path);
    model.n_head = required_int(config, "num_attention_heads", 1024, path);
    model.n_embd = required_int(config, "hidden_size", 65536, path);
    model.vocab_size = required_int(config, "vocab_size", 1 << 24, path);
    model.max_seq_len = required_int(config, "max_position_embeddings", 1 << 20, path);
    model.ffn_hidden = required_int(config, "intermediate_size", 1 << 20, path);
    model.n_kv_head = config.contains("num_key_value_heads") && !config["num_key_value_heads"].is_null()
                          ? required_int(config, "num_key_value_heads", 1024, path)
                          : model.n_head;
    model.norm_epsilon = static_cast<float>(required_number(config, "rms_norm_eps", path));
    model.rope_theta = config.contains("rope_theta") ? static_cast<float>(required_number(config, "rope_theta", path))
                                                     : 10000.f;
    model.tie_embeddings = config.contains("tie_word_embeddings") && config["tie_word_embeddings"].is_boolean()
                               ? config["tie_word_embeddings"].get<bool>()
                               : false;  // LlamaConfig's default
    MIXGPT_REQUIRE(model.n_embd % model.n_head == 0 && model.n_head % model.n_kv_head == 0,
                   path + ": hidden_size, num_attention_heads, num_key_value_heads: " +
                       format("%d, %d, %d", model.n_embd, model.n_head, model.n_kv_head) +
                       " (heads must divide hidden_size, key/value heads the heads)");
    require_default(config, "rope_scaling", nullptr, path, "mixgpt's RoPE has no scaling");
    require_default(config, "hidden_act", "silu", path, "mixgpt's gated MLP is SwiGLU");
    require_default(config, "attention_bias", false, path, "mixgpt's llama family has no biases");
    require_default(config, "mlp_bias", false, path, "mixgpt's llama family has no biases");
    require_default(config, "pretraining_tp", 1, path, "tensor-parallel slicing of the MLP is not modelled");
    require_default(config, "head_dim", model.n_embd / model.n_head, path, "mixgpt's head_dim is hidden_size / heads");
    if (qwen3)
        require_default(config, "use_sliding_window", false, path, "mixgpt exports no Qwen3 window");
    else if (model_type == "llama")
        require_default(config, "sliding_window", nullptr, path, "LlamaForCausalLM attends to the whole context");
    else if (config.contains("sliding_window") && !config["sliding_window"].is_null())
        model.attention_window = required_int(config, "sliding_window", 1 << 20, path);
    if (config.contains("eos_token_id") && config["eos_token_id"].is_number_integer())
        result.eos_token_id = config["eos_token_id"].get<int>();
    try {
        model.validate();
    } catch (const Error& error) {
        throw Error(path + ": " + error.what());
    }
    return result;
}

}  // namespace

const char* hf_architecture(const GPTConfig& model) {
    if (model.arch == Arch::gpt2) return "GPT2LMHeadModel";
    if (model.qk_norm) return "Qwen3ForCausalLM";
    return model.attention_window > 0 ? "MistralForCausalLM" : "LlamaForCausalLM";
}

std::string hf_config_json(const HfModelConfig& config) {
    if (config.model.arch == Arch::llama) return llama_config_json(config);
    const GPTConfig& model = config.model;
    const Json json = {{"architectures", {"GPT2LMHeadModel"}},
                       {"model_type", "gpt2"},
                       {"vocab_size", model.vocab_size},
                       {"n_positions", model.max_seq_len},
                       {"n_ctx", model.max_seq_len},
                       {"n_embd", model.n_embd},
                       {"n_layer", model.n_layer},
                       {"n_head", model.n_head},
                       {"n_inner", nullptr},
                       {"activation_function", "gelu_new"},
                       {"layer_norm_epsilon", kLayerNormEpsilon},
                       {"resid_pdrop", 0.0},
                       {"embd_pdrop", 0.0},
                       {"attn_pdrop", 0.0},
                       {"initializer_range", 0.02},
                       {"scale_attn_weights", true},
                       {"scale_attn_by_inverse_layer_idx", false},
                       {"reorder_and_upcast_attn", false},
                       {"tie_word_embeddings", true},
                       {"use_cache", true},
                       {"bos_token_id", config.eos_token_id},
                       {"eos_token_id", config.eos_token_id},
                       {"torch_dtype", "float32"}};
    return json.dump(2) + "\n";
}

std::string hf_generation_config_json(const HfModelConfig& config) {
    const Json json = {{"bos_token_id", config.eos_token_id},
                       {"eos_token_id", config.eos_token_id},
                       {"pad_token_id", config.eos_token_id},
                       {"do_sample", false},
                       {"max_length", config.model.max_seq_len}};
    return json.dump(2) + "\n";
}

HfModelConfig parse_hf_config(const std::string& text, const std::string& path) {
    const Json config = Json::parse(text, nullptr, false);
    MIXGPT_REQUIRE(!config.is_discarded() && config.is_object(), path + ": not a JSON object");
    for (const char* llama_like : {"llama", "qwen3", "mistral"})
        if (config.contains("model_type") && config["model_type"] == llama_like)
            return parse_llama_config(config, path, llama_like);
    MIXGPT_REQUIRE(
        config.contains("model_type") && config["model_type"] == "gpt2",
        path + ": model_type: " + (config.contains("model_type") ? config["model_type"].dump() : "missing") +
            ", mixgpt imports \"gpt2\" (GPT2LMHeadModel), \"llama\" (LlamaForCausalLM), \"qwen3\" "
            "(Qwen3ForCausalLM) and \"mistral\" (MistralForCausalLM)");
    HfModelConfig result;
    result.model.n_layer = required_int(config, "n_layer", 1024, path);
    result.model.n_head = required_int(config, "n_head", 1024, path);
    result.model.n_embd = required_int(config, "n_embd", 65536, path);
    result.model.vocab_size = required_int(config, "vocab_size", 1 << 24, path);
    result.model.max_seq_len = required_int(config, "n_positions", 1 << 20, path);
    MIXGPT_REQUIRE(
        result.model.n_embd % result.model.n_head == 0,
        path + ": n_embd: " + std::to_string(result.model.n_embd) + " is not a multiple of n_head");
    MIXGPT_REQUIRE(
        config.contains("activation_function") && (config["activation_function"] == "gelu_new" ||
                                                   config["activation_function"] == "gelu_pytorch_tanh"),
        path + ": activation_function: " +
            (config.contains("activation_function") ? config["activation_function"].dump() : "missing") +
            " is not supported (mixgpt's GELU is the tanh approximation, gelu_new)");
    MIXGPT_REQUIRE(
        config.contains("layer_norm_epsilon") && config["layer_norm_epsilon"].is_number() &&
            std::fabs(config["layer_norm_epsilon"].get<double>() - kLayerNormEpsilon) <= 1e-12,
        path + ": layer_norm_epsilon: " +
            (config.contains("layer_norm_epsilon") ? config["layer_norm_epsilon"].dump() : "missing") +
            " is not supported (mixgpt's LayerNorm uses 1e-05)");
    require_default(config, "tie_word_embeddings", true, path, "mixgpt ties lm_head to wte");
    require_default(config, "n_inner", 4 * result.model.n_embd, path, "mixgpt's MLP is 4 n_embd wide");
    require_default(config, "scale_attn_weights", true, path, "mixgpt scales attention by 1/sqrt(head_dim)");
    require_default(config, "scale_attn_by_inverse_layer_idx", false, path, "not in mixgpt's attention");
    require_default(config, "add_cross_attention", false, path, "mixgpt is decoder-only");
    if (config.contains("eos_token_id") && config["eos_token_id"].is_number_integer())
        result.eos_token_id = config["eos_token_id"].get<int>();
    return result;
}

}  // namespace mixgpt::interop
