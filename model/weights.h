// Typed views of every GPT tensor inside an arena laid out by ParameterLayout:
// the working weights (act dtype) and the gradients (fp32) are both seen this way.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "model/parameters.h"

namespace mixgpt {

struct BlockTensors {
    TensorView ln_1_weight, ln_1_bias;            // (C)
    TensorView c_attn_weight, c_attn_bias;        // (3C, C), (3C)
    TensorView attn_proj_weight, attn_proj_bias;  // (C, C), (C)
    TensorView ln_2_weight, ln_2_bias;            // (C)
    TensorView c_fc_weight, c_fc_bias;            // (4C, C), (4C)
    TensorView mlp_proj_weight, mlp_proj_bias;    // (C, 4C), (C)
};

struct GPTTensors {
    TensorView wte;  // (Vp, C)
    TensorView wpe;  // (maxT, C)
    std::vector<BlockTensors> blocks;
    TensorView ln_f_weight, ln_f_bias;  // (C)
};

// Views into `arena` (elements of `dtype`, laid out by `layout`).
GPTTensors tensor_views(const ParameterLayout& layout, int n_layer, void* arena, DType dtype);

}  // namespace mixgpt
