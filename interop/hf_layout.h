// mixgpt's parameters as the tensors of a Hugging Face model folder, for either family: each
// HfTensor is a block of rows of one mixgpt tensor (the whole of it, its real vocabulary rows, or
// one of the projections a fused mixgpt matrix holds), possibly transposed. The names and layouts
// per family: interop/gpt2_layout.h (GPT2LMHeadModel), interop/llama_layout.h (LlamaForCausalLM, and
// Qwen3ForCausalLM under --qk-norm).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/parameters.h"

namespace mixgpt::interop {

struct HfTensor {
    std::string hf_name;            // "transformer.h.0.attn.c_attn.weight", "model.layers.0.self_attn.k_proj.weight"
    std::vector<int64_t> hf_shape;  // transformers' shape: (C, 3C) for c_attn, (Hkv hd, C) for k_proj
    // The mixgpt tensor ((3C, C), or the packed ((H + 2 Hkv) hd, C)); null for a tensor the model
    // computes without holding it, every value `constant` (Qwen3's q_norm and k_norm weights: 1).
    const ParameterView* view = nullptr;
    float constant = 0.f;
    bool transposed = false;        // hf = rows^T
    int64_t first_row = 0;          // the block of the view's rows that is exported: from here ...
    int64_t rows = 0;               // ... this many (vocab_size for the vocabulary-sized tensors)
    std::vector<const char*> decided_by;  // the config.json fields hf_shape follows from ("n_embd")
};

// In ParameterLayout order, for the model's family.
std::vector<HfTensor> hf_tensors(const GPTConfig& config, const ParameterLayout& layout);

// mixgpt tensor rows -> transformers' layout (hf_shape, fp32) from the arena `parameters`; a tensor
// without a view is hf_shape's elements of its constant.
std::vector<float> to_hf(const HfTensor& tensor, const float* parameters);
// transformers' layout `values` (hf_shape elements) -> the rows' place in `parameters`; padding
// rows are left as they are (zero in a fresh arena). The tensor has a view.
void from_hf(const HfTensor& tensor, const float* values, float* parameters);

}  // namespace mixgpt::interop
