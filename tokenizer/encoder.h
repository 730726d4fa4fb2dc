// Fast bulk encoding: text is cut into units, and each unit's tokens come from
// a cache, so SentencePiece runs once per distinct word instead of once per word.
//
// A unit is a newline alone, or a run of spaces followed by a run of
// characters that are neither space nor newline ("  the", "word.", "\n").
// Tokenizer::load rejects models with a piece that spans a unit boundary (a
// newline, or a space after a non-space), so no BPE merge and no unigram
// piece crosses one, and encoding unit by unit gives exactly SentencePiece's
// tokens for the whole text.
//
// An Encoder is not thread-safe: use one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace mixgpt {

class Encoder {
public:
    // The cache is emptied when it holds `max_cached_units` units.
    explicit Encoder(Tokenizer tokenizer, size_t max_cached_units = size_t{1} << 20);

    // Appends the tokens of `text` to `ids`. Returns how many bytes were not
    // valid UTF-8 (each became its byte-fallback token).
    size_t encode(std::string_view text, std::vector<int32_t>& ids);

private:
    void encode_valid(std::string_view text, std::vector<int32_t>& ids);
    void encode_cached(std::string_view unit, std::vector<int32_t>& ids);
    std::string_view store_key(std::string_view unit);
    void clear_cache();

    struct TokenSpan {
        uint32_t offset;
        uint32_t count;
    };

    Tokenizer tokenizer_;
    size_t max_cached_units_;
    std::unordered_map<std::string_view, TokenSpan> cache_;  // keys point into key_blocks_
    std::vector<std::unique_ptr<char[]>> key_blocks_;
    size_t key_block_used_ = 0;
    std::vector<int32_t> cached_tokens_;  // the spans' tokens, back to back
    std::vector<int32_t> scratch_;
};

}  // namespace mixgpt
