#include "interop/gpt2_layout.h"

#include "core/error.h"

namespace mixgpt::interop {
namespace {

// GPT-2's Conv1D weights, stored (in, out).
bool is_conv1d_weight(Role role) {
    return role == Role::qkv_weight || role == Role::attention_output_weight || role == Role::mlp_input_weight ||
           role == Role::mlp_output_weight;
}

const char* gpt2_suffix(Role role) {
    switch (role) {
        case Role::token_embedding:
            return "wte.weight";
        case Role::position_embedding:
            return "wpe.weight";
        case Role::final_norm_weight:
            return "ln_f.weight";
        case Role::final_norm_bias:
            return "ln_f.bias";
        case Role::attention_norm_weight:
            return "ln_1.weight";
        case Role::attention_norm_bias:
            return "ln_1.bias";
        case Role::qkv_weight:
            return "attn.c_attn.weight";
        case Role::qkv_bias:
            return "attn.c_attn.bias";
        case Role::attention_output_weight:
            return "attn.c_proj.weight";
        case Role::attention_output_bias:
            return "attn.c_proj.bias";
        case Role::mlp_norm_weight:
            return "ln_2.weight";
        case Role::mlp_norm_bias:
            return "ln_2.bias";
        case Role::mlp_input_weight:
            return "mlp.c_fc.weight";
        case Role::mlp_input_bias:
            return "mlp.c_fc.bias";
        case Role::mlp_output_weight:
            return "mlp.c_proj.weight";
        case Role::mlp_output_bias:
            return "mlp.c_proj.bias";
        case Role::output_head:
        case Role::embedding_norm_weight:
        case Role::embedding_norm_bias:
            break;
    }
    throw Error("GPT-2 has no tensor of this role (an untied output head, an embedding norm)");
}

}  // namespace

std::string gpt2_name(const ParameterView& view) {
    const std::string block = view.layer >= 0 ? "h." + std::to_string(view.layer) + "." : std::string();
    return "transformer." + block + gpt2_suffix(view.role);
}

std::vector<HfTensor> gpt2_tensors(const GPTConfig& config, const ParameterLayout& layout) {
    MIXGPT_REQUIRE(config.arch == Arch::gpt2, std::string("a GPT-2 folder holds gpt2-family models only, not ") +
                                                  arch_name(config.arch));
    std::vector<HfTensor> tensors;
    for (const ParameterView& view : layout.views()) {
        HfTensor tensor;
        tensor.view = &view;
        tensor.rows = view.real_rows;
        tensor.hf_name = gpt2_name(view);
        tensor.transposed = is_conv1d_weight(view.role);
        if (view.role == Role::token_embedding) {
            tensor.decided_by = {"vocab_size", "n_embd"};
        } else if (view.role == Role::position_embedding) {
            tensor.decided_by = {"n_positions", "n_embd"};
        } else {
            tensor.decided_by = {"n_embd"};  // c_attn 3 n_embd, c_fc 4 n_embd wide
        }
        if (tensor.transposed) {
            tensor.hf_shape = {view.shape[1], view.shape[0]};
        } else if (view.shape.size() == 2) {
            tensor.hf_shape = {tensor.rows, view.shape[1]};
        } else {
            tensor.hf_shape = view.shape;
        }
        tensors.push_back(tensor);
    }
    return tensors;
}

}  // namespace mixgpt::interop
