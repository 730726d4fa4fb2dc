// The whole GPT's forward pass in float64, composed of tests/reference_f64.h's ops: embeddings,
// pre-LayerNorm blocks (attention, 4x MLP with tanh-GELU), final LayerNorm, logits against wte,
// and the per-position losses. The model-level reference of tests that score whole sequences
// (multiple-choice evaluation), with the same semantics as model/gpt.h's forward.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"
#include "tests/reference_f64.h"

namespace mixgpt {

class F64Gpt {
public:
    // parameters: the fp32 arena in model/parameters.h's layout (a checkpoint's masters).
    F64Gpt(const GPTConfig& config, const std::vector<float>& parameters);

    // One sequence: tokens and targets (t), t <= max_seq_len. Returns each position's loss
    // -log softmax(logits)[target] (t).
    F64Vector losses(const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets) const;

private:
    const F64Vector& parameter(const std::string& name) const;

    GPTConfig config_;
    std::vector<std::pair<std::string, F64Vector>> parameters_;  // by name, widened to float64
};

}  // namespace mixgpt
