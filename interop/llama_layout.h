// mixgpt's Llama-style parameters (model/family_llama.cpp) as LlamaForCausalLM's tensors
// (transformers' names and layouts; Linear weights are (out, in) in both, so nothing is transposed):
//   token_embedding                    model.embed_tokens.weight         (vocab_size, C): real rows only
//   blocks.<l>.attention_norm.weight   model.layers.<l>.input_layernorm.weight
//   blocks.<l>.attention.qkv.weight    rows [0, H hd)            model.layers.<l>.self_attn.q_proj.weight
//                                      rows [H hd, (H+Hkv) hd)   model.layers.<l>.self_attn.k_proj.weight
//                                      rows [(H+Hkv) hd, ...)    model.layers.<l>.self_attn.v_proj.weight
//   blocks.<l>.attention.output.weight model.layers.<l>.self_attn.o_proj.weight
//   blocks.<l>.mlp_norm.weight         model.layers.<l>.post_attention_layernorm.weight
//   blocks.<l>.mlp.gate_up.weight      rows [0, F)   model.layers.<l>.mlp.gate_proj.weight
//                                      rows [F, 2F)  model.layers.<l>.mlp.up_proj.weight
//   blocks.<l>.mlp.down.weight         model.layers.<l>.mlp.down_proj.weight
//   final_norm.weight                  model.norm.weight
//   output_head (untied only)          lm_head.weight                     (vocab_size, C)
// Under --qk-norm the folder is Qwen3ForCausalLM's, whose blocks are Llama's with the queries and
// keys RMS-normalised per head before RoPE, with weights: those are written as ones,
//   (none)                             model.layers.<l>.self_attn.q_norm.weight, k_norm.weight  (hd)
// and import takes a Qwen3 folder only when they are all ones.
// RoPE needs no permutation of q_proj and k_proj: mixgpt rotates the pairs (i, i + hd/2) of each
// head (kernels/ops.h, AttentionParams), which is transformers' rotate_half convention. (Meta's
// original checkpoints pair (2i, 2i + 1); their converter permutes into this layout.)
#pragma once

#include <vector>

#include "interop/hf_layout.h"

namespace mixgpt::interop {

// In ParameterLayout order; throws Error for a model of another family.
std::vector<HfTensor> llama_tensors(const GPTConfig& config, const ParameterLayout& layout);

}  // namespace mixgpt::interop
