// Autoregressive generation with the model's KV cache: the prompt is run once (in chunks of at
// most T positions), then each new token costs one position of compute.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/token_choice.h"
#include "model/gpt.h"

namespace mixgpt {

struct GenerationOptions {
    int max_new_tokens = 200;
    SamplingParams sampling;
    // Row r draws from std::mt19937_64 seeded by std::seed_seq{seed low, seed high, r}, as
    // u = (x >> 11) * 2^-53: portable, and a row's text does not depend on how many rows run.
    uint64_t seed = 0;
    int32_t stop_token = -1;  // a row ends after producing it (it is kept); -1: none
};

// `rows` independent continuations of `prompt` (rows <= model.batch_size()). Generation stops at
// max_new_tokens, when every row has produced the stop token, or when the context reaches the
// model's max_seq_len. Returns each row's new tokens.
std::vector<std::vector<int32_t>> generate(GPT& model, const std::vector<int32_t>& prompt, int rows,
                                           const GenerationOptions& options);

}  // namespace mixgpt
