// mixgpt's parameters as GPT2LMHeadModel's tensors (transformers' names and layouts).
//
// Every mixgpt tensor has a GPT-2 counterpart, "transformer." + its name ("wte" and "wpe" gain
// ".weight"), as GPT2LMHeadModel.save_pretrained writes them; lm_head.weight is tied to wte and
// not stored. Two layout differences:
//   - GPT-2's Conv1D weights (c_attn, c_proj, c_fc) are stored (in, out); mixgpt's matrices are
//     (out, in) like torch.nn.Linear: they are transposed;
//   - mixgpt's wte has padded_vocab_size rows (zero past vocab_size): only the vocab_size real
//     rows are exported, and import pads again with zeros.
// Everything else (q, k, v order and head layout inside c_attn, tanh GELU, LayerNorm eps 1e-5,
// learned positions, biases everywhere) is GPT-2's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/parameters.h"

namespace mixgpt::interop {

struct Gpt2Tensor {
    std::string hf_name;            // "transformer.h.0.attn.c_attn.weight"
    std::vector<int64_t> hf_shape;  // GPT-2's shape: (C, 3C) for that one
    const ParameterView* view;      // the mixgpt tensor (shape (3C, C) there)
    bool transposed = false;        // hf = view^T
    int64_t rows = 0;               // leading rows of the view that are exported (vocab_size for wte)
};

// In ParameterLayout order.
std::vector<Gpt2Tensor> gpt2_tensors(const GPTConfig& config, const ParameterLayout& layout);

// mixgpt tensor -> GPT-2 layout (hf_shape, fp32) from the arena `parameters`.
std::vector<float> to_gpt2(const Gpt2Tensor& tensor, const float* parameters);
// GPT-2 layout `values` (hf_shape elements) -> the view's place in `parameters`; padding rows
// are left as they are (zero in a fresh arena).
void from_gpt2(const Gpt2Tensor& tensor, const float* values, float* parameters);

}  // namespace mixgpt::interop
