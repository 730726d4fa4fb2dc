// The Llama-style family (Llama 2/3, TinyLlama, SmolLM, OLMo): RoPE inside attention (Hugging
// Face's rotate-half convention), RMSNorm, a SwiGLU MLP with gate and up as one product, grouped-
// query attention (n_kv_head key/value heads), no biases, the output head tied or not.
//
// The MLP's hidden width F, unless given: Llama's rule, F = m · floor(2/3 · 4C) rounded up to a
// multiple of 256, m the multiplier (1 unless --ffn-multiplier): 1024 for C = 384, 2048 for 768.
// Widths under 512 round to a multiple of 64 instead, so that tiny models keep F near 8/3 C
// (C = 128: 384, where 256 would give 512; C = 32: 128).
// Initialisation as GPT-2's (N(0, 0.02), the residual projections 0.02/sqrt(2L), norms 1).
#include <cmath>
#include <cstdint>

#include "model/family.h"

namespace mixgpt {
namespace {

constexpr int kFfnMultipleOf = 256, kSmallWidth = 512, kSmallFfnMultipleOf = 64;

int llama_ffn_hidden(int n_embd, double multiplier) {
    const int64_t two_thirds_of_4c = int64_t{8} * n_embd / 3;
    const auto hidden = static_cast<int64_t>(std::floor(multiplier * static_cast<double>(two_thirds_of_4c)));
    const int64_t multiple = n_embd < kSmallWidth ? kSmallFfnMultipleOf : kFfnMultipleOf;
    return static_cast<int>((hidden + multiple - 1) / multiple * multiple);
}

}  // namespace

const Family& llama_family() {
    static const Family family = {
        Arch::llama,
        "llama",
        "blocks.",
        NormKind::rmsnorm,
        MlpKind::swiglu,
        {MlpKind::relu2},  // F wide (default 4C, nanochat's), one input product instead of gate and up
        PositionKind::rotary,
        {
            {Role::token_embedding, "token_embedding", Dim::padded_vocab, Dim::embd, Init::normal, true},
            {Role::output_head, "output_head", Dim::padded_vocab, Dim::embd, Init::normal, true,
             Presence::untied_head},
            {Role::final_norm_weight, "final_norm.weight", Dim::embd, Dim::none, Init::ones, false,
             Presence::norm_weight},
            {Role::embedding_norm_weight, "embedding_norm.weight", Dim::embd, Dim::none, Init::ones, false,
             Presence::embedding_norm_weight},
        },
        {
            {Role::attention_norm_weight, "attention_norm.weight", Dim::embd, Dim::none, Init::ones, false,
             Presence::norm_weight},
            {Role::qkv_weight, "attention.qkv.weight", Dim::qkv, Dim::embd, Init::normal, true},
            {Role::attention_output_weight, "attention.output.weight", Dim::embd, Dim::embd,
             Init::residual_normal, true},
            {Role::mlp_norm_weight, "mlp_norm.weight", Dim::embd, Dim::none, Init::ones, false,
             Presence::norm_weight},
            {Role::mlp_input_weight, "mlp.gate_up.weight", Dim::mlp_input, Dim::embd, Init::normal, true},
            {Role::mlp_output_weight, "mlp.down.weight", Dim::embd, Dim::mlp_hidden, Init::residual_normal,
             true},
        },
        {Setting::n_kv_head, Setting::ffn_hidden, Setting::norm_epsilon, Setting::rope_theta,
         Setting::tie_embeddings, Setting::logit_softcap, Setting::mlp, Setting::norm_weights,
         Setting::zero_init, Setting::embedding_norm, Setting::qk_norm, Setting::init},
        llama_ffn_hidden,
    };
    return family;
}

}  // namespace mixgpt
