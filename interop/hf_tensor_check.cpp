#include "interop/hf_tensor_check.h"

#include <regex>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "interop/hf_config.h"

namespace mixgpt::interop {
namespace {

bool ends_with(const std::string& name, const std::string& suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

// config.json's name for the layer count, and each shape field's value, in the family's words.
const char* layer_field(const GPTConfig& config) {
    return config.arch == Arch::llama ? "num_hidden_layers" : "n_layer";
}

int64_t field_value(const GPTConfig& config, const std::string& field) {
    const std::pair<const char*, int64_t> fields[] = {{"vocab_size", config.vocab_size},
                                                      {"n_embd", config.n_embd},
                                                      {"hidden_size", config.n_embd},
                                                      {"n_positions", config.max_seq_len},
                                                      {"intermediate_size", config.mlp_hidden()},
                                                      {"num_attention_heads", config.n_head},
                                                      {"num_key_value_heads", config.kv_heads()},
                                                      {"n_layer", config.n_layer},
                                                      {"num_hidden_layers", config.n_layer},
                                                      {"head_dim", config.head_dim()}};
    for (const auto& [name, value] : fields)
        if (field == name) return value;
    throw Error("config.json field '" + field + "' decides no shape");
}

// "config.json's n_embd 768 gives", "config.json's vocab_size 300, n_embd 64 give".
std::string fields_give(const GPTConfig& config, const std::vector<const char*>& fields) {
    std::string text = "config.json's ";
    for (size_t i = 0; i < fields.size(); ++i)
        text +=
            (i ? ", " : "") + std::string(fields[i]) + " " + std::to_string(field_value(config, fields[i]));
    return text + (fields.size() == 1 ? " gives" : " give");
}

// The block a tensor name belongs to ("transformer.h.3.ln_1.weight", "model.layers.3...": 3); -1.
int layer_of(const std::string& name) {
    static const std::regex block(R"((^|\.)(h|layers)\.(\d{1,9})\.)");
    std::smatch match;
    return std::regex_search(name, match, block) ? std::stoi(match[3].str()) : -1;
}

std::string layers_given(const GPTConfig& config) {
    return format("config.json's %s %d gives ", layer_field(config), config.n_layer) +
           (config.n_layer == 1 ? std::string("layer 0 only") : format("layers 0 to %d", config.n_layer - 1));
}

// Why config.json expects `tensor`, after "no tensor <name>".
std::string why_expected(const GPTConfig& config, const HfTensor& tensor) {
    if (tensor.view == nullptr || tensor.view->layer >= 0) return "; " + layers_given(config);
    if (tensor.view->role == Role::output_head)
        return "; config.json's tie_word_embeddings false asks for one";
    return std::string(", which every ") +
           hf_architecture(config) + " has";
}

}  // namespace

const SafetensorsTensor* find_hf_tensor(const SafetensorsHeader& header, const std::string& hf_name) {
    if (const SafetensorsTensor* found = header.find(hf_name)) return found;
    const std::string prefix = "transformer.";
    if (hf_name.compare(0, prefix.size(), prefix) != 0) return nullptr;
    return header.find(hf_name.substr(prefix.size()));
}

bool is_hf_buffer(const std::string& name) {
    return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") ||
           ends_with(name, ".rotary_emb.inv_freq");
}

void require_hf_tensors(const SafetensorsHeader& header, const std::string& weights_path,
                        const GPTConfig& config, const std::vector<HfTensor>& expected) {
    const char* architecture = hf_architecture(config);
    std::set<std::string> used;
    for (const HfTensor& tensor : expected) {
        const SafetensorsTensor* found = find_hf_tensor(header, tensor.hf_name);
        MIXGPT_REQUIRE(found != nullptr,
                       weights_path + ": no tensor " + tensor.hf_name + why_expected(config, tensor));
        MIXGPT_REQUIRE(found->shape == tensor.hf_shape,
                       weights_path + ": " + found->name + " is " + shape_text(found->shape) + ", " +
                           fields_give(config, tensor.decided_by) + " " + shape_text(tensor.hf_shape));
        used.insert(found->name);
    }
    const HfTensor& embedding = expected.front();  // the token embedding leads ParameterLayout
    for (const SafetensorsTensor& tensor : header.tensors) {
        if (used.count(tensor.name) || is_hf_buffer(tensor.name)) continue;
        const int layer = layer_of(tensor.name);
        MIXGPT_REQUIRE(layer < config.n_layer,
                       weights_path + ": extra tensor " + tensor.name + "; " + layers_given(config));
        MIXGPT_REQUIRE(tensor.name == "lm_head.weight", weights_path + ": unexpected tensor '" + tensor.name +
                                                            "' (not part of " + architecture + ")");
        MIXGPT_REQUIRE(tensor.shape == embedding.hf_shape,
                       weights_path + ": lm_head.weight is " + shape_text(tensor.shape) + ", " +
                           fields_give(config, embedding.decided_by) + " " + shape_text(embedding.hf_shape));
    }
}

}  // namespace mixgpt::interop
