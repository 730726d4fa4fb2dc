// mixgpt's parameters as GPT2LMHeadModel's tensors (transformers' names and layouts).
//
// Every tensor of a gpt2-family model (model/family_gpt2.cpp) has a GPT-2 counterpart, "transformer."
// + its name ("wte" and "wpe" gain ".weight"; gpt2_name), as GPT2LMHeadModel.save_pretrained
// writes them; lm_head.weight is tied to wte and not stored. Two layout differences:
//   - GPT-2's Conv1D weights (c_attn, c_proj, c_fc) are stored (in, out); mixgpt's matrices are
//     (out, in) like torch.nn.Linear: they are transposed;
//   - mixgpt's token embedding has padded_vocab_size rows (zero past vocab_size): only the vocab_size real
//     rows are exported, and import pads again with zeros.
// Everything else (q, k, v order and head layout inside c_attn, tanh GELU, LayerNorm eps 1e-5,
// learned positions, biases everywhere) is GPT-2's.
#pragma once

#include <string>
#include <vector>

#include "interop/hf_layout.h"

namespace mixgpt::interop {

// In ParameterLayout order; throws Error for a model of another family.
std::vector<HfTensor> gpt2_tensors(const GPTConfig& config, const ParameterLayout& layout);

// The GPT2LMHeadModel name of a tensor of a gpt2-family model ("transformer.h.0.ln_1.weight").
std::string gpt2_name(const ParameterView& view);

}  // namespace mixgpt::interop
