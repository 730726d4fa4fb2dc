// A model's shape and family, and the activation-recomputation policy.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "model/family.h"

namespace mixgpt {

struct GPTConfig {
    Arch arch = Arch::gpt2;
    int n_layer = 2;
    int n_head = 2;
    int n_embd = 128;
    int vocab_size = 256;
    int max_seq_len = 256;
    // The settings a family may read (model/family.h, Family::settings); the neutral value, which
    // a family that does not read one must keep, in brackets.
    int n_kv_head = 0;             // key/value heads, dividing n_head; 0: n_head [0 or n_head]
    int ffn_hidden = 0;            // the MLP's hidden width F; 0: the family's rule [0 or 4 n_embd]
    float norm_epsilon = 1e-5f;    // RMSNorm's epsilon [1e-5, LayerNorm's]
    float rope_theta = 10000.f;    // RoPE's base; read by rotary families only [any]
    bool tie_embeddings = true;    // output head = token embedding [true]
    // The logits are c = logit_softcap · tanh(z / logit_softcap) of the head's output z, in the loss,
    // evaluation and sampling alike (Gemma 2, nanochat); 0: off [0]. Read by every family.
    float logit_softcap = 0.f;
    // The MLP when not the family's own (--mlp): one of Family::other_mlps [unset]. Read by every family.
    std::optional<MlpKind> mlp;
    // The norms' weights (and LayerNorm's biases); false: parameter-free norms everywhere (nanochat's
    // RMSNorm), as if every weight were 1 and every bias 0 [true]. Read by every family.
    bool norm_weights = true;
    // Tensors initialised to zero instead of as their family says (--zero-init, nanochat's): the
    // projections that write into the residual (Init::residual_normal: attention and MLP outputs),
    // and the output head, which must then be untied [false, false]. Read by every family.
    bool zero_init_projections = false;
    bool zero_init_head = false;
    // A norm of the family's kind right after the embeddings (after adding learned positions),
    // whose output is the first block's input (nanochat) [false]. Read by every family.
    bool embedding_norm = false;
    // Each query and key head RMS-normalised (parameter-free, epsilon norm_epsilon) before attention
    // and RoPE (the speedrun's, nanochat's and Qwen3's QK-norm) [false]. Read by every family.
    bool qk_norm = false;
    // How the matrices and embeddings start (--init): gpt2 (N(0, 0.02), the residual projections
    // 0.02 / sqrt(2 L)) or fan_in (nanochat's: each weight matrix (out, in), q, k, v and SwiGLU's gate
    // and up taken apart, N(0, 1/in · min(1, out/in)); the embeddings N(0, 1), with an untied head
    // only); --zero-init applies after either [gpt2]. Read by every family.
    InitScheme init = InitScheme::gpt2;
    // --attention-mask document: the token that ends a document (the dataset's end-of-text, which
    // belongs to the document it ends); a position then attends only to the positions before it in
    // its own document, in training, evaluation and sampling alike (kernels/ops.h, AttentionParams).
    // -1: the causal mask alone. Not part of the model's function outside mixgpt: export leaves it out.
    int32_t document_separator = -1;
    // --positions document (needs the document mask): each token's position is its place in its
    // document, so the learned position embedding restarts at every document. Rotary families read
    // it too and rotate at the positions they always do: under the document mask a query meets only
    // keys of its own document, and RoPE's scores depend on the distance between the two alone, so
    // restarting the angles leaves the function unchanged [false]. Not part of the model's function
    // outside mixgpt (one document per sequence there starts at position 0): export leaves it out.
    bool document_positions = false;
    // --window W: sliding-window attention, each position seeing itself and the W - 1 before it
    // (within its document under the document mask); 0: the whole context [0]. window_pattern
    // (--window-pattern) says which layers it holds for: one letter per layer, cycled over the
    // layers, S a windowed layer and L a whole-context one ("LSSS": every fourth layer, from the
    // first, sees the whole context); empty: every layer is windowed.
    // (A fixed array, NUL-terminated, so that the config stays trivially copyable: ranks broadcast
    // it as bytes.)
    static constexpr size_t kMaxWindowPattern = 16;
    int attention_window = 0;
    std::array<char, kMaxWindowPattern + 1> window_pattern{};
    std::string window_pattern_text() const { return window_pattern.data(); }
    // Throws Error naming --window-pattern when `pattern` is longer than kMaxWindowPattern letters.
    void set_window_pattern(const std::string& pattern);
    // The window of layer `layer`: attention_window, or 0 where window_pattern says L.
    int window_of(int layer) const;

    const Family& family() const { return family_of(arch); }
    MlpKind mlp_kind() const { return mlp.value_or(family().mlp); }
    // Whether a model of this configuration holds the tensor (its Presence).
    bool holds(const TensorSpec& spec) const;
    // How the tensor of `role`, `init` in its family's list, starts: zeros where zero_init says so.
    Init initialisation(Role role, Init init) const;
    // "none", "proj", "head" or "proj,head" (--zero-init, the checkpoint's zero_init).
    std::string zero_init_name() const;
    // vocab_size rounded up to a multiple of 128: the rows of the embedding and the logit columns.
    int padded_vocab_size() const;
    int head_dim() const;       // n_embd / n_head
    int kv_heads() const;       // Hkv
    int mlp_hidden() const;     // F (4C for gpt2; the family's rule for its own MLP, else 4C, unless ffn_hidden)
    int64_t size_of(Dim dim) const;
    // "d<depth>" for depth 2, 6, 12, 24, 36, 48: n_layer = n_head = depth, n_embd = 64 * depth
    // (d12 is GPT-2 124M's shape), in family `arch` with its default settings. Throws Error naming
    // the known presets otherwise.
    static GPTConfig preset(const std::string& name, int vocab_size, int max_seq_len, Arch arch = Arch::gpt2);
    // Throws Error naming the first bad field.
    void validate() const;
    // Real parameters, without the vocabulary padding.
    int64_t num_parameters() const;
};

// What the backward pass recomputes instead of storing (see model/README.md):
//   none       every activation is kept from the forward pass
//   selective  the norms' outputs and the MLP's activation are recomputed from stored inputs
//   full       only each block's input residual is kept; the block's forward is rerun in backward
enum class Recompute { none, selective, full };

Recompute parse_recompute(const std::string& name);  // throws Error on an unknown name
const char* recompute_name(Recompute recompute);

}  // namespace mixgpt
