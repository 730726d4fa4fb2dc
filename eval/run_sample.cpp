#include "eval/run_sample.h"

#include "core/error.h"
#include "core/log.h"
#include "eval/checkpoint_tokenizer.h"
#include "eval/generate.h"

namespace mixgpt {

std::vector<std::string> run_sampling(const SampleOptions& options) {
    MIXGPT_REQUIRE(options.num_samples >= 1, "num-samples: must be at least 1");
    options.sampling.validate();
    CheckpointModel loaded = CheckpointModel::read(options.checkpoint, options.allow_nonfinite);
    const Tokenizer tokenizer = load_checkpoint_tokenizer(loaded, options.tokenizer);
    loaded.instantiate(options.device, options.num_samples, 0);

    std::vector<int32_t> prompt = tokenizer.encode(options.prompt);
    if (prompt.empty()) prompt.push_back(tokenizer.eot_id());
    const int context = loaded.model->config().max_seq_len;
    const int64_t room = context - static_cast<int64_t>(prompt.size());
    if (room > 0 && options.max_new_tokens > room)
        log_warning(
            format("max-new-tokens %d: the prompt's %zu tokens leave room for %lld new tokens in the "
                   "model's context of %d; generation stops there",
                   options.max_new_tokens, prompt.size(), static_cast<long long>(room), context));
    GenerationOptions generation;
    generation.max_new_tokens = options.max_new_tokens;
    generation.sampling = options.sampling;
    generation.seed = options.seed;
    generation.stop_token = options.stop_at_end_of_text ? tokenizer.eot_id() : -1;

    std::vector<std::string> texts;
    for (std::vector<int32_t>& tokens : generate(*loaded.model, prompt, options.num_samples, generation)) {
        if (!tokens.empty() && tokens.back() == tokenizer.eot_id() && options.stop_at_end_of_text)
            tokens.pop_back();
        texts.push_back(tokenizer.decode(tokens));
    }
    return texts;
}

}  // namespace mixgpt
