// Fast bulk encoding with a SentencePiece tokenizer: text is cut into units, and each unit's
// tokens come from a cache, so SentencePiece runs once per distinct word instead of once per word.
//
// A unit is a newline alone, or a run of spaces followed by a run of characters that are
// neither space nor newline ("  the", "word.", "\n"). SentencePieceTokenizer::load rejects
// models with a piece that spans a unit boundary (a newline, or a space after a non-space), so
// no BPE merge and no unigram piece crosses one, and encoding unit by unit gives exactly
// SentencePiece's tokens for the whole text.
//
// An Encoder is not thread-safe: use one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/token_cache.h"

namespace mixgpt {

class Encoder final : public TextEncoder {
public:
    // The cache is emptied when it holds `max_cached_units` units.
    explicit Encoder(std::shared_ptr<const SentencePieceTokenizer> tokenizer,
                     size_t max_cached_units = size_t{1} << 20);

    size_t encode(std::string_view text, std::vector<int32_t>& ids) override;

private:
    void encode_valid(std::string_view text, std::vector<int32_t>& ids);

    std::shared_ptr<const SentencePieceTokenizer> tokenizer_;
    TokenCache cache_;
    std::vector<int32_t> scratch_;
};

}  // namespace mixgpt
