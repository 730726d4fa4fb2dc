// Choosing the next token from a row of logits: temperature, top-k and top-p (nucleus) filtering,
// then one draw from the remaining distribution. Host code, independent of any backend.
#pragma once

#include <cstdint>
#include <vector>

namespace mixgpt {

struct SamplingParams {
    float temperature = 1.f;  // 0: greedy (argmax)
    int top_k = 0;            // keep the k most likely tokens; 0: all
    float top_p = 1.f;        // keep the smallest set of most likely tokens whose mass reaches top_p

    void validate() const;  // throws Error naming the bad option
};

// The distribution after temperature, top-k and top-p: probabilities over logits.size() tokens,
// zero outside the kept set, summing to 1. Ties keep the lower token id first.
std::vector<double> sampling_distribution(const std::vector<float>& logits, const SamplingParams& params);

// The token at which the cumulative distribution passes `uniform` in [0, 1); argmax when the
// temperature is 0.
int32_t choose_token(const std::vector<float>& logits, const SamplingParams& params, double uniform);

}  // namespace mixgpt
