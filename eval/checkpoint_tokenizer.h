// The tokenizer a checkpoint was trained with, checked against the SHA-256 the checkpoint records.
#pragma once

#include <string>

#include "model/checkpoint_model.h"
#include "tokenizer/tokenizer.h"

namespace mixgpt {

// The checkpoint's tokenizer (`override_path` instead when given); its SHA-256 must match.
Tokenizer load_checkpoint_tokenizer(const CheckpointModel& model, const std::string& override_path);

}  // namespace mixgpt
