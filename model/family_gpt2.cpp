// GPT-2 (Radford et al. 2019; llm.c and nanoGPT's model): learned positions, LayerNorm with bias,
// biases on every product, a 4x MLP with tanh-GELU, multi-head attention, the output head tied to
// the token embedding. The arena order (decayed matrices first, then the rest; model/parameters.h)
// and the names (GPT-2's own, "h.<l>." before a block's) are those of mixgpt's first checkpoints,
// which therefore still load.
#include "model/family.h"

namespace mixgpt {
namespace {

int four_times_width(int n_embd, double) { return 4 * n_embd; }

}  // namespace

const Family& gpt2_family() {
    static const Family family = {
        Arch::gpt2,
        "gpt2",
        "h.",
        NormKind::layernorm,
        MlpKind::gelu,
        {MlpKind::relu2},  // 4C wide, with its bias, as nanoGPT's MLP with relu(x)^2 for GELU
        PositionKind::learned,
        {
            {Role::token_embedding, "wte", Dim::padded_vocab, Dim::embd, Init::normal, true},
            {Role::position_embedding, "wpe", Dim::positions, Dim::embd, Init::normal, true},
            {Role::final_norm_weight, "ln_f.weight", Dim::embd, Dim::none, Init::ones, false,
             Presence::norm_weight},
            {Role::final_norm_bias, "ln_f.bias", Dim::embd, Dim::none, Init::zeros, false,
             Presence::norm_weight},
            {Role::embedding_norm_weight, "ln_emb.weight", Dim::embd, Dim::none, Init::ones, false,
             Presence::embedding_norm_weight},
            {Role::embedding_norm_bias, "ln_emb.bias", Dim::embd, Dim::none, Init::zeros, false,
             Presence::embedding_norm_weight},
        },
        {
            {Role::attention_norm_weight, "ln_1.weight", Dim::embd, Dim::none, Init::ones, false,
             Presence::norm_weight},
            {Role::attention_norm_bias, "ln_1.bias", Dim::embd, Dim::none, Init::zeros, false,
             Presence::norm_weight},
            {Role::qkv_weight, "attn.c_attn.weight", Dim::qkv, Dim::embd, Init::normal, true},
            {Role::qkv_bias, "attn.c_attn.bias", Dim::qkv, Dim::none, Init::zeros, false},
            {Role::attention_output_weight, "attn.c_proj.weight", Dim::embd, Dim::embd, Init::residual_normal,
             true},
            {Role::attention_output_bias, "attn.c_proj.bias", Dim::embd, Dim::none, Init::zeros, false},
            {Role::mlp_norm_weight, "ln_2.weight", Dim::embd, Dim::none, Init::ones, false,
             Presence::norm_weight},
            {Role::mlp_norm_bias, "ln_2.bias", Dim::embd, Dim::none, Init::zeros, false,
             Presence::norm_weight},
            {Role::mlp_input_weight, "mlp.c_fc.weight", Dim::mlp_input, Dim::embd, Init::normal, true},
            {Role::mlp_input_bias, "mlp.c_fc.bias", Dim::mlp_input, Dim::none, Init::zeros, false},
            {Role::mlp_output_weight, "mlp.c_proj.weight", Dim::embd, Dim::mlp_hidden, Init::residual_normal,
             true},
            {Role::mlp_output_bias, "mlp.c_proj.bias", Dim::embd, Dim::none, Init::zeros, false},
        },
        {Setting::logit_softcap, Setting::mlp, Setting::norm_weights, Setting::zero_init,
         Setting::embedding_norm, Setting::qk_norm, Setting::init},
        four_times_width,
    };
    return family;
}

}  // namespace mixgpt
