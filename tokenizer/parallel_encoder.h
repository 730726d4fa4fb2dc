// Encodes a batch of text segments on all cores (OpenMP, one TextEncoder and its
// cache per thread, segments handed out dynamically).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tokenizer/corpus.h"
#include "tokenizer/tokenizer.h"

namespace mixgpt {

class ParallelEncoder {
public:
    ParallelEncoder(const Tokenizer& tokenizer, int threads);  // threads 0: all cores

    // tokens[i] receives the tokens of segments[i]. Returns how many bytes were
    // not valid UTF-8 (each became its byte-fallback token).
    size_t encode(const std::vector<TextSegment>& segments, std::vector<std::vector<int32_t>>& tokens);
    int threads() const { return static_cast<int>(encoders_.size()); }

private:
    std::vector<std::unique_ptr<TextEncoder>> encoders_;
};

}  // namespace mixgpt
