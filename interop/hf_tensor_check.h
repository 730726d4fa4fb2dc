// The tensors of a model.safetensors against those its config.json implies, before any value is
// read: each one there, with the shape config.json gives, and nothing else (buffers and a tied
// lm_head aside). A refusal names the first tensor that differs and the config.json fields that
// decide it: "model.safetensors: transformer.h.0.attn.c_attn.weight is [512, 1536], config.json's
// n_embd 768 gives [768, 2304]".
#pragma once

#include <string>
#include <vector>

#include "interop/hf_layout.h"
#include "interop/safetensors_header.h"

namespace mixgpt::interop {

// The file's tensor for a transformers name: GPT2LMHeadModel.save_pretrained writes
// "transformer.h.0....", the original GPT-2 files omit the prefix. nullptr when absent.
const SafetensorsTensor* find_hf_tensor(const SafetensorsHeader& header, const std::string& hf_name);

// Buffers that older transformers versions saved beside the weights: GPT-2's attention masks,
// Llama's RoPE frequencies; recomputed, never read.
bool is_hf_buffer(const std::string& name);

// Throws Error "<weights_path>: <tensor> ..." for the first expected tensor missing or shaped
// otherwise than config.json gives, then for the first tensor of the file that is none of them,
// a buffer, or an lm_head.weight of the embedding's shape (which the caller compares with it).
void require_hf_tensors(const SafetensorsHeader& header, const std::string& weights_path,
                        const GPTConfig& config, const std::vector<HfTensor>& expected);

}  // namespace mixgpt::interop
