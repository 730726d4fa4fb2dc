// The model-shape options every command that builds a model takes (train, bench, study): a preset
// of the depth/width ladder, the family, and overrides. Declared once here as plain values, and
// once as flags (cli/model_options.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/config.h"

namespace mixgpt {

struct ModelOptions {
    std::string preset = "d6";  // d2, d6, d12, d24, d36, d48
    std::string arch = "gpt2";  // gpt2 | llama (model/family.h)
    // Overrides of the preset's fields when > 0.
    int n_layer = 0, n_head = 0, n_embd = 0;
    // Settings of families that read them (llama); 0 or "" keeps the family's default. Given for a
    // family that does not read them, they are refused.
    int n_kv_head = 0;          // default: n_head (multi-head attention)
    int ffn_hidden = 0;         // default: the family's rule (llama: 2/3 4C, rounded up to 256, or 64 under C = 512)
    double ffn_multiplier = 0;  // scales the rule before rounding (Llama's ffn_dim_multiplier)
    double rms_norm_eps = 0;    // default 1e-5
    double rope_theta = 0;      // default 10000
    std::string tie_embeddings;  // "true" | "false"; default: tied
    double logit_softcap = 0;    // every family: cap the logits at C tanh(z / C); 0: off (default)
    std::string mlp;             // every family: gelu | swiglu | relu2; "": the family's own (model/family.h)
    std::string norm_weights;    // every family: "true" | "false" (parameter-free norms); default: true
    std::string zero_init;       // every family: "proj", "head" or "proj,head" start at zero; "" or "none": neither
    bool embedding_norm = false;  // every family: a norm right after the embeddings
    bool qk_norm = false;         // every family: RMS-normalised query and key heads
    std::string init;             // every family: gpt2 | fan-in; "": gpt2
    std::string attention_mask;   // every family: causal | document (GPTConfig::document_separator); "": causal
    std::string positions;        // every family: absolute | document (GPTConfig::document_positions); "": absolute
    int window = 0;               // every family: sliding-window attention (GPTConfig::attention_window); 0: none
    std::string window_pattern;   // every family: L/S per layer, cycled; "": every layer windowed
    // A named set of the options above (kRecipes in model_options.cpp): "nanochat", or "" for none.
    // It sets the family and every option left at its "not given" value; values given beside it win.
    std::string recipe;
};

// The options with the recipe's values filled in (unchanged without one); throws Error naming an
// unknown recipe.
ModelOptions with_recipe(const ModelOptions& options);

// The configuration of a model with these options (the recipe's filled in), the dataset's vocabulary,
// context T and end-of-text token (the document separator of attention_mask document; -1: unknown,
// which that mask refuses); throws Error naming the option at fault (an option the family does not
// read, a bad value).
GPTConfig model_config(const ModelOptions& options, int vocab_size, int seq_len, int32_t end_of_text = -1);

// The options as (name, value) text pairs (recorded in checkpoints with the training options), a
// recipe as the options it fills in.
std::vector<std::pair<std::string, std::string>> describe_model_options(const ModelOptions& options);

}  // namespace mixgpt
