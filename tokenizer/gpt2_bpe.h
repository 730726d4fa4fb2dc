// GPT-2's byte-pair merging of one pre-tokenized piece (tokenizer/gpt2_pretokenizer.h): start
// from one token per byte and, while some adjacent pair is a merge, join the pair of lowest
// merge rank, the leftmost one among equals. GPT-2's encoder.py joins every occurrence of the
// lowest pair in one left-to-right pass instead; both give the same tokens because a merge only
// uses tokens of earlier merges (checked by read_gpt2_vocabulary), so joining a pair never
// makes a pair ranked at or below it. A heap keeps long pieces (a megabyte of spaces) at
// O(n log n).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/gpt2_files.h"

namespace mixgpt {

class Gpt2Bpe {
public:
    explicit Gpt2Bpe(const Gpt2Vocabulary& vocabulary);

    // Appends the tokens of `piece` to `ids`. Thread-safe (the scratch space is the caller's).
    struct Scratch;
    void encode(std::string_view piece, std::vector<int32_t>& ids, Scratch& scratch) const;

    struct Scratch {
        struct Symbol {
            int32_t id;
            int32_t previous, next;  // neighbours in the piece, -1 at the ends
        };
        struct Candidate {
            int32_t rank, position;  // the pair of symbols[position] and its next
            int32_t left, right;     // their ids when the pair was found
            int32_t result;          // the id they join into
        };
        std::vector<Symbol> symbols;
        std::vector<Candidate> heap;
    };

private:
    struct Merge {
        int32_t rank;
        int32_t result;
    };
    static uint64_t pair_key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    void push_candidate(Scratch& scratch, int32_t position) const;

    std::array<int32_t, 256> byte_ids_{};
    std::unordered_map<uint64_t, Merge> merges_;  // pair_key(left, right) -> merge
};

}  // namespace mixgpt
