// The model-shape flags of train, bench and study (model/model_options.h), declared once.
#pragma once

#include <CLI/CLI.hpp>

#include "model/model_options.h"

namespace mixgpt::cli {

// Adds --model, --arch, --n-layer, --n-head, --n-embd and the Llama-style settings (--n-kv-head,
// --ffn-hidden, --ffn-multiplier, --rms-norm-eps, --rope-theta, --tie-embeddings) to `command`, in
// the group "Model", writing into `options`.
void add_model_options(CLI::App& command, ModelOptions& options);

}  // namespace mixgpt::cli
