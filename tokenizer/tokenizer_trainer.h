// Trains a SentencePiece model in-process (libsentencepiece_train) with the
// settings that make it lossless and fast to encode (tokenizer/tokenizer.h,
// tokenizer/encoder.h): byte fallback, identity normalization, no dummy
// prefix, whitespace kept as is (runs of spaces may form pieces), digits
// split, and the control token <|endoftext|>. No <s> or </s>.
#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace mixgpt {

enum class TokenizerModelType { bpe, unigram };
TokenizerModelType parse_tokenizer_model_type(const std::string& name);  // "bpe" or "unigram"

struct TokenizerTrainingOptions {
    TokenizerModelType model_type = TokenizerModelType::bpe;
    int vocab_size = 8192;
    int threads = 0;  // 0: all cores
};

// The sentences SentencePiece trains on: lines of the sample, without their
// newline; empty lines are skipped and lines longer than kMaxSentenceBytes are
// cut before a space (or at a character boundary) into several sentences.
class TrainingSample {
public:
    static constexpr size_t kMaxSentenceBytes = 4096;

    // At most `budget` bytes are kept: the sample ends before the first sentence that would pass it.
    explicit TrainingSample(size_t budget = std::numeric_limits<size_t>::max()) : budget_(budget) {}
    void raise_budget(size_t bytes) { budget_ += bytes; }  // (a budget given share by share)

    void add_text(std::string_view text);
    size_t bytes() const { return bytes_; }
    bool full() const { return bytes_ >= budget_; }
    const std::vector<std::string>& sentences() const { return sentences_; }

private:
    void add_line(std::string_view line);

    size_t budget_;
    std::vector<std::string> sentences_;
    size_t bytes_ = 0;
};

// Returns the serialized model. Throws Error when the sample is empty or the
// vocabulary size does not fit the sample (saying which sizes would).
std::string train_tokenizer(const TrainingSample& sample, const TokenizerTrainingOptions& options);

}  // namespace mixgpt
