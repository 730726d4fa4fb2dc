#include "tokenizer/tokenizer_trainer.h"

#include <sentencepiece_trainer.h>

#include <algorithm>
#include <regex>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/utf8.h"

namespace mixgpt {
namespace {

class SentenceIterator : public sentencepiece::SentenceIterator {
public:
    explicit SentenceIterator(const std::vector<std::string>& sentences) : sentences_(sentences) {}
    bool done() const override { return next_ >= sentences_.size(); }
    void Next() override { ++next_; }
    const std::string& value() const override { return sentences_[next_]; }
    sentencepiece::util::Status status() const override { return {}; }

private:
    const std::vector<std::string>& sentences_;
    size_t next_ = 0;
};

// Where to cut a line longer than `limit`: before the last space that follows
// a non-space within the limit, else at a character boundary.
size_t cut_position(std::string_view line, size_t limit) {
    for (size_t position = limit; position > 1; --position) {
        if (line[position] == ' ' && line[position - 1] != ' ') return position;
    }
    const size_t boundary = utf8::character_boundary_at_or_before(line.data(), limit);
    return boundary > 0 ? boundary : limit;
}

// SentencePiece reports vocabulary sizes that do not fit as internal errors
// with its source location; say it in our words.
std::string explain_training_error(const std::string& message, int vocab_size) {
    std::smatch match;
    if (std::regex_search(message, match, std::regex(R"(smaller than required_chars\. \d+ vs (\d+))")))
        return format(
            "vocabulary size %d is too small for the corpus: it needs at least %s "
            "(its characters, 256 byte tokens and the special tokens)",
            vocab_size, match[1].str().c_str());
    if (std::regex_search(
            message, match,
            std::regex(R"(Vocabulary size too high \(\d+\)\. Please set it to a value <= (\d+))")))
        return format("vocabulary size %d is too large for the corpus sample: at most %s is possible",
                      vocab_size, match[1].str().c_str());
    return "SentencePiece training failed: " + message;
}

}  // namespace

TokenizerModelType parse_tokenizer_model_type(const std::string& name) {
    if (name == "bpe") return TokenizerModelType::bpe;
    if (name == "unigram") return TokenizerModelType::unigram;
    throw Error("unknown tokenizer model type '" + name + "' (expected bpe or unigram)");
}

void TrainingSample::add_text(std::string_view text) {
    size_t start = 0;
    while (start < text.size() && !full()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        add_line(text.substr(start, end - start));
        start = end + 1;
    }
}

void TrainingSample::add_line(std::string_view line) {
    while (line.size() > kMaxSentenceBytes) {
        const size_t cut = cut_position(line, kMaxSentenceBytes);
        add_line(line.substr(0, cut));
        line.remove_prefix(cut);
    }
    if (line.empty() || full()) return;
    if (line.size() > budget_ - bytes_) {  // the sample ends before the first sentence past its budget
        budget_ = bytes_;
        return;
    }
    sentences_.emplace_back(line);
    bytes_ += line.size();
}

std::string train_tokenizer(const TrainingSample& sample, const TokenizerTrainingOptions& options) {
    MIXGPT_REQUIRE(!sample.sentences().empty(), "cannot train a tokenizer: the corpus sample is empty");
    MIXGPT_REQUIRE(options.vocab_size > 0, format("vocabulary size %d must be positive", options.vocab_size));
    const int threads = options.threads > 0
                            ? options.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::unordered_map<std::string, std::string> arguments = {
        {"model_type", options.model_type == TokenizerModelType::bpe ? "bpe" : "unigram"},
        {"vocab_size", std::to_string(options.vocab_size)},
        {"byte_fallback", "true"},
        {"normalization_rule_name", "identity"},
        {"add_dummy_prefix", "false"},
        {"remove_extra_whitespaces", "false"},
        {"allow_whitespace_only_pieces", "true"},
        {"split_by_whitespace", "true"},
        {"split_digits", "true"},
        {"control_symbols", "<|endoftext|>"},
        {"unk_id", "0"},
        {"bos_id", "-1"},
        {"eos_id", "-1"},
        {"pad_id", "-1"},
        {"character_coverage", "0.9995"},
        {"max_sentence_length", std::to_string(TrainingSample::kMaxSentenceBytes)},
        {"num_threads", std::to_string(threads)},
        {"minloglevel", "2"},  // errors come back as a status; warnings would be noise
    };
    SentenceIterator sentences(sample.sentences());
    std::string serialized;
    auto status = sentencepiece::SentencePieceTrainer::Train(arguments, &sentences, &serialized);
    // SentencePiece before 0.1.96 (Debian 11 has 0.1.95) has no allow_whitespace_only_pieces and
    // rejects it before reading any sentence; asked again without it, it learns no piece made of
    // spaces alone (a run of spaces takes more tokens; encoding stays lossless).
    const std::string whitespace_option = "allow_whitespace_only_pieces";
    if (!status.ok() && std::string(status.error_message()).find("\"" + whitespace_option + "\"") != std::string::npos) {
        log_info("this SentencePiece (before 0.1.96) cannot learn whitespace-only pieces: training without them");
        arguments.erase(whitespace_option);
        SentenceIterator sentences_again(sample.sentences());
        status = sentencepiece::SentencePieceTrainer::Train(arguments, &sentences_again, &serialized);
    }
    if (!status.ok()) throw Error(explain_training_error(status.error_message(), options.vocab_size));
    return serialized;
}

}  // namespace mixgpt
