// `mixgpt import`: a Hugging Face GPT2LMHeadModel folder (mixgpt's export, or any GPT-2-architecture
// safetensors model with a SentencePiece tokenizer.model) as a mixgpt run directory:
//   <output>/checkpoints/step_<8 digits>.h5   FP32 masters; fresh AdamW moments and loss scale;
//                                             no data position (training starts at the data's beginning)
//   <output>/tokenizer.model                  the folder's, unchanged
// which `train --resume -o <output>`, `eval <output>` and `sample <output>` accept. The step,
// tokens seen, precision, dataset and batch size come from mixgpt's safetensors metadata when
// present (0, 0, fp32 and unrecorded otherwise).
//
// Refused with a one-line Error: a missing or malformed model.safetensors, a config.json mixgpt
// cannot represent (interop/hf_config.h), a tokenizer that is not SentencePiece with byte fallback
// (interop/hf_tokenizer.h), a vocabulary that differs from the tokenizer's, a missing tensor, a
// tensor whose dtype is not F32/BF16/F16 or whose shape differs from config.json's, an untied
// lm_head, any tensor GPT2LMHeadModel would not have, and (unless allow_nonfinite) a tensor holding
// NaN or Inf values, named with their count. SIGINT/SIGTERM stop it with its temporaries removed.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"

namespace mixgpt::interop {

struct ImportOptions {
    std::string directory;         // the Hugging Face folder
    std::string output;            // the run directory to create
    bool force = false;            // replace an existing non-empty output directory (never an input, a
                                   // file, or a run in use: interop/staging_directory.h)
    bool allow_nonfinite = false;  // import weights that are NaN or Inf anyway
};

struct ImportResult {
    std::string checkpoint;  // the checkpoint written
    GPTConfig config;
    int64_t step = 0;
};

ImportResult import_hf(const ImportOptions& options);

}  // namespace mixgpt::interop
