// The README.md model card of an exported folder.
#pragma once

#include <string>

#include "model/checkpoint.h"

namespace mixgpt::interop {

struct ModelCardFacts {
    std::string checkpoint_path;
    const Checkpoint* checkpoint = nullptr;
    std::string run_directory;  // "" when a checkpoint file was exported: no eval.json or metrics.jsonl
    std::string dtype;          // "fp32", "bf16" or "fp16": the exported weights
    std::string commit;         // the exporting build's
    std::string tokenizer;      // which tokenizer the folder ships (interop/hf_tokenizer.h)
};

// Markdown: corpus (the dataset trained on), tokens seen, steps, training precision, exported
// dtype, validation loss / perplexity / bits per byte (from the run's eval.json when it is for
// this step, else the last eval line of metrics.jsonl for this step, else "not evaluated"), the
// training command rebuilt from the options the checkpoint records, and a loading snippet.
std::string model_card(const ModelCardFacts& facts);

}  // namespace mixgpt::interop
