// GPT-2's pre-tokenisation without a regex engine: splits text into the pieces that GPT-2's
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// matches, in order, with Unicode classes from tokenizer/unicode_classes.h (\s is the
// White_Space property, as in Python's `regex` module that GPT-2's encoder.py used, and in
// tiktoken). At each position, the first alternative that matches wins:
//
//   1. an apostrophe-contraction ('s 't 're 've 'm 'll 'd, lower case only)
//   2. an optional U+0020 space, then a run of letters, or of numbers, or of other characters
//      (neither whitespace, letter nor number)
//   3. a run of whitespace: all of it at the end of the text; before a non-whitespace
//      character, all but its last character (which then starts the next piece, as " word"
//      when it is a space), or the single character when the run has only one.
//
// Bytes that are not valid UTF-8 count as other characters, one byte each, so any byte string
// is split losslessly: the pieces, concatenated, are the text.
#pragma once

#include <cstddef>
#include <string_view>

namespace mixgpt {

class Gpt2PreTokenizer {
public:
    explicit Gpt2PreTokenizer(std::string_view text) : text_(text) {}

    // The next piece; false at the end of the text.
    bool next(std::string_view& piece);
    // Bytes seen so far that were not valid UTF-8.
    size_t invalid_bytes() const { return invalid_bytes_; }

private:
    std::string_view text_;
    size_t position_ = 0;
    size_t invalid_bytes_ = 0;
};

}  // namespace mixgpt
