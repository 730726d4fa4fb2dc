// config.json and generation_config.json of a Hugging Face GPT2LMHeadModel, LlamaForCausalLM,
// Qwen3ForCausalLM or MistralForCausalLM folder.
#pragma once

#include <string>

#include "model/config.h"

namespace mixgpt::interop {

struct HfModelConfig {
    GPTConfig model;
    int eos_token_id = -1;  // mixgpt's end-of-text token; also bos (GPT-2 has one token for both)
};

// The config.json text. gpt2: model_type gpt2, the shape, vocab_size (the real vocabulary), tanh
// GELU ("gelu_new"), LayerNorm eps 1e-5, tied embeddings, no dropout (mixgpt trains without).
// llama: model_type llama, hidden_size, intermediate_size, num_attention_heads,
// num_key_value_heads, num_hidden_layers, rms_norm_eps, rope_theta (no rope_scaling),
// max_position_embeddings, tie_word_embeddings, vocab_size, silu, no biases. llama under --qk-norm:
// model_type qwen3 (Llama's fields, head_dim, no sliding window); llama with --window W (every
// layer): model_type mistral (Llama's fields without rope_scaling, pretraining_tp and the bias
// switches, and sliding_window W: transformers' query q sees keys q - W < k <= q, as --window).
std::string hf_config_json(const HfModelConfig& config);
// The transformers class of a model's folder: "GPT2LMHeadModel", "LlamaForCausalLM",
// "Qwen3ForCausalLM" (the llama family with QK-norm) or "MistralForCausalLM" (with a window).
const char* hf_architecture(const GPTConfig& model);
// generation_config.json: bos/eos/pad = end of text, greedy by default, up to n_positions.
std::string hf_generation_config_json(const HfModelConfig& config);

// Reads config.json (path given for messages); throws Error "<path>: <field>: <reason>" for a
// field mixgpt cannot represent: another model type; for gpt2 another activation, eps other than
// 1e-5, untied embeddings, n_inner other than 4 n_embd, layer-scaled attention, cross-attention;
// for llama rope_scaling, another activation, biases, pretraining_tp, another head_dim, a
// sliding window; qwen3 as llama, read with QK-norm on (its q_norm and k_norm weights must be
// ones: interop/llama_layout.h), without a window; mistral as llama, its sliding_window (null:
// none) read as --window.
HfModelConfig parse_hf_config(const std::string& text, const std::string& path);

}  // namespace mixgpt::interop
