// The parameter groups of `--optimizer muon` (train/README.md, "Optimizers"): which parts of the
// parameter arena (model/parameters.h) Muon updates, and which AdamW updates at which peak rate.
//
// Muon: every 2-D weight matrix inside the blocks, each as the matrix its product uses: the packed
// qkv weight as q (H hd, C), k (Hkv hd, C) and v (Hkv hd, C); SwiGLU's [gate | up] weight as gate
// (F, C) and up (F, C); the attention output, the MLP input (GELU) and output. Being rows of one
// row-major tensor, each is a contiguous range of the arena.
// AdamW: everything else, in runs of neighbouring tensors that share a rate and weight decay: the
// token (and position) embedding at the embedding rate, an untied output head at the head rate,
// norms and biases at the base rate (--lr) without decay. A tied head is the token embedding,
// at the embedding rate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/parameters.h"

namespace mixgpt {

struct MuonMatrix {
    std::string name;    // "h.0.attn.c_attn.weight[q]", "blocks.1.mlp.gate_up.weight[up]", ...
    int64_t offset = 0;  // elements from the start of the arena
    int64_t rows = 0, cols = 0;
};

enum class AdamWRate { base, embedding, head };

struct AdamWGroup {
    int64_t begin = 0, end = 0;  // elements [begin, end) of the arena
    AdamWRate rate = AdamWRate::base;
    bool decay = false;  // weight decay applies to every element, or none
};

struct ParameterGroups {
    std::vector<MuonMatrix> muon;   // in arena order
    std::vector<AdamWGroup> adamw;  // in arena order; together with muon they cover the arena once
};

ParameterGroups muon_parameter_groups(const GPTConfig& config, const ParameterLayout& layout);

}  // namespace mixgpt
