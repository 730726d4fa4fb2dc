#include "tests/reference_f64_gpt.h"

#include "core/error.h"
#include "model/parameters.h"

namespace mixgpt {
namespace {

F64Vector add(const F64Vector& a, const F64Vector& b) {
    F64Vector sum(a.size());
    for (size_t i = 0; i < a.size(); ++i) sum[i] = a[i] + b[i];
    return sum;
}

}  // namespace

F64Gpt::F64Gpt(const GPTConfig& config, const std::vector<float>& parameters) : config_(config) {
    const ParameterLayout layout(config);
    MIXGPT_REQUIRE(static_cast<int64_t>(parameters.size()) == layout.total(),
                   "F64Gpt: wrong parameter count");
    for (const ParameterView& view : layout.views()) {
        const auto begin = parameters.begin() + view.offset;
        parameters_.emplace_back(view.name, F64Vector(begin, begin + view.numel));
    }
}

const F64Vector& F64Gpt::parameter(const std::string& name) const {
    for (const auto& [stored, values] : parameters_)
        if (stored == name) return values;
    throw Error("F64Gpt: no parameter " + name);
}

F64Vector F64Gpt::losses(const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets) const {
    const int T = static_cast<int>(tokens.size()), C = config_.n_embd, Vp = config_.padded_vocab_size();
    MIXGPT_REQUIRE(T >= 1 && T <= config_.max_seq_len && targets.size() == tokens.size(),
                   "F64Gpt: bad sequence");
    F64Vector x = f64_embedding_forward(tokens, parameter("wte"), parameter("wpe"), 1, T, C);  // (T, C)
    for (int l = 0; l < config_.n_layer; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        const F64Vector ln1 =
            f64_layernorm_forward(x, parameter(h + "ln_1.weight"), parameter(h + "ln_1.bias"), T, C).out;
        const F64Vector qkv = f64_matmul_forward(ln1, parameter(h + "attn.c_attn.weight"),
                                                 parameter(h + "attn.c_attn.bias"), T, C, 3 * C, false)
                                  .out;                                                       // (T, 3C)
        const F64Vector attention = f64_attention_forward(qkv, 1, T, C, config_.n_head).out;  // (T, C)
        x = add(x, f64_matmul_forward(attention, parameter(h + "attn.c_proj.weight"),
                                      parameter(h + "attn.c_proj.bias"), T, C, C, false)
                       .out);
        const F64Vector ln2 =
            f64_layernorm_forward(x, parameter(h + "ln_2.weight"), parameter(h + "ln_2.bias"), T, C).out;
        const F64Vector fc = f64_matmul_forward(ln2, parameter(h + "mlp.c_fc.weight"),
                                                parameter(h + "mlp.c_fc.bias"), T, C, 4 * C, true)
                                 .out;  // (T, 4C) after GELU
        x = add(x, f64_matmul_forward(fc, parameter(h + "mlp.c_proj.weight"),
                                      parameter(h + "mlp.c_proj.bias"), T, 4 * C, C, false)
                       .out);
    }
    const F64Vector lnf =
        f64_layernorm_forward(x, parameter("ln_f.weight"), parameter("ln_f.bias"), T, C).out;
    const F64Vector logits = f64_matmul_forward(lnf, parameter("wte"), {}, T, C, Vp, false).out;  // (T, Vp)
    return f64_classifier(logits, targets, T, Vp, config_.vocab_size, 1.0, 1.0).losses;
}

}  // namespace mixgpt
