// The GPT's shape and the activation-recomputation policy.
#pragma once

#include <cstdint>
#include <string>

namespace mixgpt {

struct GPTConfig {
    int n_layer = 2;
    int n_head = 2;
    int n_embd = 128;
    int vocab_size = 256;
    int max_seq_len = 256;

    // vocab_size rounded up to a multiple of 128: the rows of wte and the logit columns.
    int padded_vocab_size() const;
    int head_dim() const;
    // "d<depth>" for depth 2, 6, 12, 24, 36, 48: n_layer = n_head = depth, n_embd = 64 * depth
    // (d12 is GPT-2 124M's shape). Throws Error naming the known presets otherwise.
    static GPTConfig preset(const std::string& name, int vocab_size, int max_seq_len);
    // Throws Error naming the first bad field.
    void validate() const;
    // Real parameters, without the vocabulary padding.
    int64_t num_parameters() const;
};

// What the backward pass recomputes instead of storing (see model/README.md):
//   none       every activation is kept from the forward pass
//   selective  GELU and LayerNorm outputs are recomputed from stored inputs and statistics
//   full       only each block's input residual is kept; the block's forward is rerun in backward
enum class Recompute { none, selective, full };

Recompute parse_recompute(const std::string& name);  // throws Error on an unknown name
const char* recompute_name(Recompute recompute);

}  // namespace mixgpt
