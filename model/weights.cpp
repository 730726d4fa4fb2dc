#include "model/weights.h"

#include <string>

namespace mixgpt {
namespace {

TensorView view_of(const ParameterLayout& layout, const std::string& name, void* arena, DType dtype) {
    const ParameterView& parameter = layout.find(name);
    void* data = static_cast<char*>(arena) + static_cast<size_t>(parameter.offset) * dtype_size(dtype);
    if (parameter.shape.size() == 1) return TensorView(data, dtype, {parameter.shape[0]});
    return TensorView(data, dtype, {parameter.shape[0], parameter.shape[1]});
}

}  // namespace

GPTTensors tensor_views(const ParameterLayout& layout, int n_layer, void* arena, DType dtype) {
    auto view = [&](const std::string& name) { return view_of(layout, name, arena, dtype); };
    GPTTensors tensors;
    tensors.wte = view("wte");
    tensors.wpe = view("wpe");
    for (int l = 0; l < n_layer; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        tensors.blocks.push_back(
            {view(h + "ln_1.weight"), view(h + "ln_1.bias"), view(h + "attn.c_attn.weight"),
             view(h + "attn.c_attn.bias"), view(h + "attn.c_proj.weight"), view(h + "attn.c_proj.bias"),
             view(h + "ln_2.weight"), view(h + "ln_2.bias"), view(h + "mlp.c_fc.weight"),
             view(h + "mlp.c_fc.bias"), view(h + "mlp.c_proj.weight"), view(h + "mlp.c_proj.bias")});
    }
    tensors.ln_f_weight = view("ln_f.weight");
    tensors.ln_f_bias = view("ln_f.bias");
    return tensors;
}

}  // namespace mixgpt
