#include "interop/llama_layout.h"

#include "core/error.h"

namespace mixgpt::interop {
namespace {

std::string layer_prefix(int layer) { return "model.layers." + std::to_string(layer) + "."; }

// One HfTensor: `rows` rows of `view` from `first_row`, named `name`, shaped by config.json's
// `decided_by`.
HfTensor rows_of(const ParameterView& view, std::string name, int64_t first_row, int64_t rows,
                 std::vector<const char*> decided_by) {
    HfTensor tensor;
    tensor.decided_by = std::move(decided_by);
    tensor.hf_name = std::move(name);
    tensor.view = &view;
    tensor.first_row = first_row;
    tensor.rows = rows;
    tensor.hf_shape = view.shape.size() == 2 ? std::vector<int64_t>{rows, view.shape[1]} : std::vector<int64_t>{rows};
    return tensor;
}

// Qwen3's per-head norm weight (head_dim): no mixgpt tensor, ones (mixgpt's QK-norm has no weights).
HfTensor ones(std::string name, int64_t head_dim) {
    HfTensor tensor;
    tensor.decided_by = {"head_dim"};
    tensor.hf_name = std::move(name);
    tensor.hf_shape = {head_dim};
    tensor.constant = 1.f;
    return tensor;
}

}  // namespace

std::vector<HfTensor> llama_tensors(const GPTConfig& config, const ParameterLayout& layout) {
    MIXGPT_REQUIRE(config.arch == Arch::llama, std::string("a Llama folder holds llama-family models only, not ") +
                                                   arch_name(config.arch));
    const int64_t hd = config.head_dim(), q_rows = int64_t{config.n_head} * hd;
    const int64_t kv_rows = int64_t{config.kv_heads()} * hd, F = config.mlp_hidden();
    std::vector<HfTensor> tensors;
    const std::vector<const char*> width = {"hidden_size"}, vocabulary = {"vocab_size", "hidden_size"},
                                   mlp = {"intermediate_size", "hidden_size"},
                                   kv = {"num_key_value_heads", "num_attention_heads", "hidden_size"};
    for (const ParameterView& view : layout.views()) {
        const std::string block = layer_prefix(view.layer);
        const auto whole = [&](const std::string& name, const std::vector<const char*>& decided_by) {
            tensors.push_back(rows_of(view, name, 0, view.real_rows, decided_by));
        };
        switch (view.role) {
            case Role::token_embedding:
                whole("model.embed_tokens.weight", vocabulary);
                break;
            case Role::output_head:
                whole("lm_head.weight", vocabulary);
                break;
            case Role::final_norm_weight:
                whole("model.norm.weight", width);
                break;
            case Role::attention_norm_weight:
                whole(block + "input_layernorm.weight", width);
                break;
            case Role::qkv_weight:
                tensors.push_back(rows_of(view, block + "self_attn.q_proj.weight", 0, q_rows, width));
                tensors.push_back(rows_of(view, block + "self_attn.k_proj.weight", q_rows, kv_rows, kv));
                tensors.push_back(
                    rows_of(view, block + "self_attn.v_proj.weight", q_rows + kv_rows, kv_rows, kv));
                if (config.qk_norm)
                    for (const char* norm : {"self_attn.q_norm.weight", "self_attn.k_norm.weight"})
                        tensors.push_back(ones(block + norm, hd));
                break;
            case Role::attention_output_weight:
                whole(block + "self_attn.o_proj.weight", width);
                break;
            case Role::mlp_norm_weight:
                whole(block + "post_attention_layernorm.weight", width);
                break;
            case Role::mlp_input_weight:
                tensors.push_back(rows_of(view, block + "mlp.gate_proj.weight", 0, F, mlp));
                tensors.push_back(rows_of(view, block + "mlp.up_proj.weight", F, F, mlp));
                break;
            case Role::mlp_output_weight:
                whole(block + "mlp.down_proj.weight", mlp);
                break;
            default:
                throw Error("a Llama folder has no tensor for " + view.name);
        }
    }
    return tensors;
}

}  // namespace mixgpt::interop
