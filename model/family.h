// A model family as data: which tensors a model of it holds (shapes, initialisation, checkpoint
// names, weight-decay class) and which variant of each step its blocks run. GPT-2 and the
// Llama-style family are two descriptions (family_gpt2.cpp, family_llama.cpp) read by one model
// (model/gpt.h); no other file of model/ names a family. How to add one: model/README.md.
//
// Every family runs the same skeleton, the pre-norm decoder that GPT-2, Llama, Mistral and Qwen
// share (llama.cpp builds its graphs from the same few choices: norm type, FFN type, position
// encoding):
//   x = embed(tokens)                      (+ learned positions; then norm(x) under --embedding-norm)
//   per block: x += attention_output(attention(qkv(norm(x))))     (RoPE inside attention)
//              x += mlp_output(activation(mlp_input(norm(x))))
//   logits = final_norm(x) · output_head^T   (the token embedding when the head is tied)
// with the steps below chosen per family, and every bias present only when the family lists it.
#pragma once

#include <string>
#include <vector>

namespace mixgpt {

struct GPTConfig;

enum class Arch { gpt2, llama };

enum class NormKind {
    layernorm,  // layernorm_* ops: weight and bias, eps 1e-5 (fixed by the op)
    rmsnorm,    // rmsnorm_* ops: weight only, eps GPTConfig::norm_epsilon
};

enum class MlpKind {
    gelu,    // input (4C, C) with bias and tanh-GELU fused into the product; output (C, 4C)
    swiglu,  // input (2F, C) = [gate | up], silu(gate) * up (swiglu_* ops); output (C, F)
    relu2,   // input (F, C), relu(x)^2 (relu2_* ops; the speedrun's and nanochat's); output (C, F)
};

enum class PositionKind {
    learned,  // a (max_seq_len, C) table added to the token embeddings
    rotary,   // RoPE of q and k inside attention (GPTConfig::rope_theta), no table
};

// Every tensor a model may hold, by its job in the skeleton above. A family lists those it has.
enum class Role {
    // model-level
    token_embedding,     // (Vp, C)
    position_embedding,  // (max_seq_len, C)
    final_norm_weight,
    final_norm_bias,
    embedding_norm_weight,  // the norm right after the embeddings (GPTConfig::embedding_norm)
    embedding_norm_bias,
    output_head,  // (Vp, C); absent when tied to token_embedding
    // per block
    attention_norm_weight,
    attention_norm_bias,
    qkv_weight,  // ((H + 2 Hkv) hd, C): q heads, then k heads, then v heads (kernels/ops.def)
    qkv_bias,
    attention_output_weight,  // (C, H hd)
    attention_output_bias,
    mlp_norm_weight,
    mlp_norm_bias,
    mlp_input_weight,  // (mlp_input, C)
    mlp_input_bias,
    mlp_output_weight,  // (C, mlp_hidden)
    mlp_output_bias,
};
constexpr int kRoleCount = static_cast<int>(Role::mlp_output_bias) + 1;

// The sizes shapes are written in, resolved against a GPTConfig (GPTConfig::size_of).
enum class Dim {
    none,          // no second dimension: a vector
    embd,          // C
    padded_vocab,  // Vp: vocab_size rounded up to 128; rows past vocab_size stay zero
    positions,     // max_seq_len
    qkv,           // (H + 2 Hkv) hd
    mlp_input,     // 4C (gelu), 2F (swiglu) or F (relu2)
    mlp_hidden,    // 4C (gelu) or F (swiglu, relu2)
};

enum class Init {
    zeros,
    ones,
    normal,           // N(0, 0.02)
    residual_normal,  // N(0, 0.02 / sqrt(2 n_layer)): the projections that write into the residual
                      // (zeros under GPTConfig::zero_init_projections)
};

// How a model's tensors start (GPTConfig::init, --init): the family's Init kinds as GPT-2 sizes them,
// or nanochat's fan-in rule for the matrices and N(0, 1) embeddings (model/parameter_init.cpp).
enum class InitScheme { gpt2, fan_in };
const char* init_scheme_name(InitScheme scheme);           // "gpt2", "fan-in"
InitScheme parse_init_scheme(const std::string& name);     // throws Error naming the schemes

enum class Presence {
    always,
    untied_head,  // only when GPTConfig::tie_embeddings is false
    norm_weight,  // a norm's weight or bias: only when GPTConfig::norm_weights (else parameter-free)
    embedding_norm_weight,  // the embedding norm's: only when GPTConfig::embedding_norm and norm_weights
};

struct TensorSpec {
    Role role;
    const char* name;  // the parameter's name; a block's gets Family::block_prefix and "<l>." in front
    Dim rows;
    Dim cols;  // Dim::none: a vector
    Init init;
    bool decay;  // AdamW's weight decay applies
    Presence presence = Presence::always;
};

// The GPTConfig fields beyond the shape (n_layer, n_head, n_embd, vocab, context) that a family
// reads; a field it does not read must keep its neutral value (GPTConfig's comments).
// logit_softcap, mlp, norm_weights, zero_init, embedding_norm, qk_norm and init are read by every
// family (a checkpoint written before one existed reads as off, as the family's own MLP, with norm
// weights, as no zero-init, without an embedding norm, without QK-norm and as gpt2's init).
enum class Setting {
    n_kv_head,
    ffn_hidden,
    norm_epsilon,
    rope_theta,
    tie_embeddings,
    logit_softcap,
    mlp,
    norm_weights,
    zero_init,
    embedding_norm,
    qk_norm,
    init,
};

struct Family {
    Arch arch;
    const char* name;  // --arch, and the checkpoint attribute `arch`
    const char* block_prefix;  // "h." (GPT-2's names): block 3's tensors are "h.3.<name>"
    NormKind norm;
    MlpKind mlp;  // the family's own MLP
    // The MLPs GPTConfig::mlp may choose instead of `mlp` (--mlp): those whose tensors the family's
    // list describes (relu2's input is one product where SwiGLU's is two, so F rows instead of 2F).
    std::vector<MlpKind> other_mlps;
    PositionKind positions;
    std::vector<TensorSpec> model_tensors;  // model-level roles
    std::vector<TensorSpec> block_tensors;  // per-block roles
    std::vector<Setting> settings;
    // The MLP's hidden width F when GPTConfig::ffn_hidden is 0 (multiplier: --ffn-multiplier).
    int (*default_ffn_hidden)(int n_embd, double multiplier);
};

const Family& family_of(Arch arch);
Arch parse_arch(const std::string& name);  // throws Error naming the families
const char* arch_name(Arch arch);
bool is_block_role(Role role);
bool reads_setting(const Family& family, Setting setting);
const char* setting_name(Setting setting);  // "n_kv_head", ... (checkpoint attributes)
const char* mlp_name(MlpKind mlp);          // "gelu", "swiglu", "relu2" (--mlp, the checkpoint's `mlp`)
MlpKind parse_mlp(const std::string& name);  // throws Error naming the kinds
// `mlp` is the family's own or one of its other_mlps.
bool family_allows_mlp(const Family& family, MlpKind mlp);
// The MLP's hidden width F when not given: the family's rule for its own MLP (with `multiplier`),
// 4C for another (relu2: nanochat's width).
int default_mlp_hidden(const Family& family, MlpKind mlp, int n_embd, double multiplier);

// The two descriptions (family_gpt2.cpp, family_llama.cpp).
const Family& gpt2_family();
const Family& llama_family();

// Throws Error when a description is inconsistent with its step choices (a LayerNorm without its
// bias tensors, learned positions without a table, a role listed twice, ...).
void check_family(const Family& family);

}  // namespace mixgpt
