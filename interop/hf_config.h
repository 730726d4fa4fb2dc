// config.json and generation_config.json of a Hugging Face GPT2LMHeadModel folder.
#pragma once

#include <string>

#include "model/config.h"

namespace mixgpt::interop {

struct HfModelConfig {
    GPTConfig model;
    int eos_token_id = -1;  // mixgpt's end-of-text token; also bos (GPT-2 has one token for both)
};

// The config.json text: model_type gpt2, the shape, vocab_size (the real vocabulary), tanh GELU
// ("gelu_new"), LayerNorm eps 1e-5, tied embeddings, no dropout (mixgpt trains without).
std::string hf_config_json(const HfModelConfig& config);
// generation_config.json: bos/eos/pad = end of text, greedy by default, up to n_positions.
std::string hf_generation_config_json(const HfModelConfig& config);

// Reads config.json (path given for messages); throws Error "<path>: <field>: <reason>" for a
// field mixgpt cannot represent (another model type or activation, eps other than 1e-5, untied
// embeddings, n_inner other than 4 n_embd, layer-scaled attention, cross-attention).
HfModelConfig parse_hf_config(const std::string& text, const std::string& path);

}  // namespace mixgpt::interop
