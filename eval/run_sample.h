// `mixgpt sample` as a library call: text continuations of a prompt from a checkpoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/checkpoint_model.h"
#include "eval/token_choice.h"

namespace mixgpt {

struct SampleOptions {
    std::string checkpoint;  // a file or a run directory
    std::string prompt;      // "": start at a document boundary (the end-of-text token)
    int max_new_tokens = 200;
    int num_samples = 1;  // independent continuations, generated as one batch
    SamplingParams sampling;
    uint64_t seed = 0;
    bool stop_at_end_of_text = true;
    std::string tokenizer;  // "": the checkpoint's tokenizer
    DeviceOptions device;
    bool allow_nonfinite = false;  // use weights that are NaN or Inf anyway (model/finite_check.h)
};

// Each sample's new text (the prompt not repeated; a final end-of-text token dropped).
std::vector<std::string> run_sampling(const SampleOptions& options);

}  // namespace mixgpt
