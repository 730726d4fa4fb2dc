#include "eval/generate.h"

#include <algorithm>
#include <random>

#include "core/error.h"

namespace mixgpt {
namespace {

// Tokens of up to (rows, T) in backend memory, filled from the host.
class TokenInput {
public:
    TokenInput(Backend& backend, int rows, int capacity)
        : backend_(backend),
          rows_(rows),
          host_(backend.allocate_host_staging(static_cast<size_t>(rows) * capacity * sizeof(int32_t))),
          device_(backend.allocate(host_.bytes())) {}

    // Every row gets the same tokens [first, first + count) of `source`.
    TensorView set(const std::vector<int32_t>& source, size_t first, size_t count) {
        int32_t* host = host_.as<int32_t>();
        for (int row = 0; row < rows_; ++row)
            std::copy(source.begin() + static_cast<ptrdiff_t>(first),
                      source.begin() + static_cast<ptrdiff_t>(first + count),
                      host + static_cast<size_t>(row) * count);
        return upload(count);
    }
    // Row r gets the one token tokens[r].
    TensorView set_per_row(const std::vector<int32_t>& tokens) {
        std::copy(tokens.begin(), tokens.end(), host_.as<int32_t>());
        return upload(1);
    }

private:
    TensorView upload(size_t count) {
        const size_t bytes = static_cast<size_t>(rows_) * count * sizeof(int32_t);
        backend_.copy_to_backend(device_.data(), host_.data(), bytes);
        return TensorView(device_.data(), DType::i32, {rows_, static_cast<int64_t>(count)});
    }

    Backend& backend_;
    int rows_;
    Buffer host_, device_;
};

}  // namespace

std::vector<std::vector<int32_t>> generate(GPT& model, const std::vector<int32_t>& prompt, int rows,
                                           const GenerationOptions& options) {
    options.sampling.validate();
    const GPTConfig& config = model.config();
    MIXGPT_REQUIRE(rows >= 1 && rows <= model.batch_size(),
                   "generate: rows must lie in [1, " + std::to_string(model.batch_size()) + "]");
    MIXGPT_REQUIRE(!prompt.empty(), "generate: the prompt needs at least one token");
    MIXGPT_REQUIRE(static_cast<int64_t>(prompt.size()) < config.max_seq_len,
                   "prompt: " + std::to_string(prompt.size()) +
                       " tokens leave no room in the model's context of " +
                       std::to_string(config.max_seq_len));
    MIXGPT_REQUIRE(options.max_new_tokens >= 0, "max-new-tokens: must not be negative");

    Backend& backend = model.backend();
    TokenInput input(backend, rows, model.seq_len());
    TensorView logits;  // (rows, Vp) act
    int position = 0;
    for (size_t first = 0; first < prompt.size(); first += static_cast<size_t>(model.seq_len())) {
        const size_t count = std::min(prompt.size() - first, static_cast<size_t>(model.seq_len()));
        logits = model.forward_cached(input.set(prompt, first, count), position);
        position += static_cast<int>(count);
    }

    const size_t padded = static_cast<size_t>(config.padded_vocab_size());
    std::vector<unsigned char> raw(static_cast<size_t>(rows) * padded * dtype_size(logits.dtype));
    std::vector<float> all_logits(static_cast<size_t>(rows) * padded);
    std::vector<float> row_logits(static_cast<size_t>(config.vocab_size));
    std::vector<std::vector<int32_t>> generated(static_cast<size_t>(rows));
    std::vector<int32_t> next(static_cast<size_t>(rows));
    std::vector<bool> finished(static_cast<size_t>(rows), false);
    std::vector<std::mt19937_64> randoms;
    for (int row = 0; row < rows; ++row) {
        std::seed_seq seeds{static_cast<uint32_t>(options.seed), static_cast<uint32_t>(options.seed >> 32),
                            static_cast<uint32_t>(row)};
        randoms.emplace_back(seeds);
    }
    for (int produced = 0; produced < options.max_new_tokens; ++produced) {
        backend.copy_to_host(raw.data(), logits.data, raw.size());
        convert_to_float(raw.data(), logits.dtype, all_logits.data(), all_logits.size());
        for (size_t row = 0; row < static_cast<size_t>(rows); ++row) {
            const float* source = all_logits.data() + row * padded;
            std::copy(source, source + config.vocab_size, row_logits.begin());
            const double uniform = static_cast<double>(randoms[row]() >> 11) * 0x1.0p-53;
            next[row] = choose_token(row_logits, options.sampling, uniform);
            if (finished[row]) continue;
            generated[row].push_back(next[row]);
            finished[row] = next[row] == options.stop_token;
        }
        const bool all_finished =
            std::all_of(finished.begin(), finished.end(), [](bool done) { return done; });
        if (all_finished || position >= config.max_seq_len || produced + 1 == options.max_new_tokens) break;
        logits = model.forward_cached(input.set_per_row(next), position);
        ++position;
    }
    return generated;
}

}  // namespace mixgpt
