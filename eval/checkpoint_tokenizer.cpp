#include "eval/checkpoint_tokenizer.h"

#include "core/error.h"

namespace mixgpt {

Tokenizer load_checkpoint_tokenizer(const CheckpointModel& model, const std::string& override_path) {
    const std::string path = override_path.empty() ? model.checkpoint.tokenizer_path : override_path;
    Tokenizer tokenizer = Tokenizer::load(path);
    MIXGPT_REQUIRE(tokenizer.sha256() == model.checkpoint.tokenizer_sha256,
                   path + ": tokenizer_sha256 is " + tokenizer.sha256() + ", the checkpoint " + model.path +
                       " was trained with " + model.checkpoint.tokenizer_sha256);
    return tokenizer;
}

}  // namespace mixgpt
