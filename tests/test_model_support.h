// Helpers of the GPT tests: small configurations, parameters spread wide enough
// that attention is far from uniform, and one training pass read back to the host.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/ops.h"
#include "model/gpt.h"
#include "tests/reference_f64_gpt.h"

namespace mixgpt::test {

// 2 layers, 2 heads, width 32, vocabulary 200 (padded 256), context 16.
GPTConfig tiny_config();
// The same in the Llama-style family: one key/value head for the two query heads, SwiGLU F = 48,
// an untied output head, RoPE base 1000.
GPTConfig tiny_llama_config();

// "gpt2", "llama relu2 softcap", ...: the family and the issue-38 options a config sets, for test traces.
std::string config_label(const GPTConfig& config);

// Random parameters: matrices N(0, 0.1) (the vocabulary padding rows 0), biases N(0, 0.05), norm
// weights 1 + N(0, 0.1) and biases N(0, 0.1). Deterministic in `seed`.
std::vector<float> spread_parameters(const ParameterLayout& layout, uint32_t seed);

struct PassResult {
    std::vector<float> losses;     // (b * t)
    std::vector<float> gradients;  // (n)
};

// Zeroes the gradients, runs forward_backward(gradient_scale 1 / (b t)) on host tokens/targets
// (b, t), and reads losses and gradients back.
PassResult training_pass(GPT& model, const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets,
                         int64_t b, int64_t t, const StepStatus* status = nullptr);

// Each parameter tensor's relative norm error (tests/reference_f64.h) of `gradients` against a
// float64 `reference` of the whole layout (n), over the tensor's real rows, in layout order; the
// vocabulary padding rows of `gradients` are expected (EXPECT) to be zero.
std::vector<std::pair<std::string, double>> gradient_errors_per_tensor(const ParameterLayout& layout,
                                                                       const std::vector<float>& gradients,
                                                                       const std::vector<double>& reference);

// A training pass (training_pass) against the float64 model's (F64Gpt::forward_backward) on the
// same parameters, tokens and targets.
struct ReferenceErrors {
    double mean_loss = 0;     // |sum - reference sum| / reference sum of the per-position losses
    double losses = 0;        // relative norm error of the per-position losses
    double gradients = 0;     // of the whole gradient arena
    double worst_tensor = 0;  // the largest of any one tensor's gradient error
    std::string worst_name;   // its tensor
};
ReferenceErrors errors_against(const PassResult& result, const F64Gpt::Pass& reference,
                               const ParameterLayout& layout);

}  // namespace mixgpt::test
