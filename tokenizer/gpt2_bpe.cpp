#include "tokenizer/gpt2_bpe.h"

#include <algorithm>

namespace mixgpt {
namespace {

using Candidate = Gpt2Bpe::Scratch::Candidate;

// std::push_heap keeps the largest first: "larger" is a lower rank, then a lower position.
bool after(const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.position > b.position;
}

}  // namespace

Gpt2Bpe::Gpt2Bpe(const Gpt2Vocabulary& vocabulary) {
    for (size_t id = 0; id < vocabulary.tokens.size(); ++id) {
        const std::string& token = vocabulary.tokens[id];
        if (token.size() == 1) byte_ids_[static_cast<unsigned char>(token[0])] = static_cast<int32_t>(id);
    }
    std::unordered_map<std::string_view, int32_t> ids;
    for (size_t id = 0; id < vocabulary.tokens.size(); ++id)
        ids.emplace(vocabulary.tokens[id], static_cast<int32_t>(id));
    merges_.reserve(vocabulary.merges.size());
    std::string joined;
    for (size_t rank = 0; rank < vocabulary.merges.size(); ++rank) {
        const auto [left, right] = vocabulary.merges[rank];
        joined = vocabulary.tokens[static_cast<size_t>(left)] + vocabulary.tokens[static_cast<size_t>(right)];
        merges_.emplace(pair_key(left, right), Merge{static_cast<int32_t>(rank), ids.at(joined)});
    }
}

void Gpt2Bpe::push_candidate(Scratch& scratch, int32_t position) const {
    const Scratch::Symbol& symbol = scratch.symbols[static_cast<size_t>(position)];
    if (symbol.next < 0) return;
    const int32_t right = scratch.symbols[static_cast<size_t>(symbol.next)].id;
    const auto found = merges_.find(pair_key(symbol.id, right));
    if (found == merges_.end()) return;
    scratch.heap.push_back(Candidate{found->second.rank, position, symbol.id, right, found->second.result});
    std::push_heap(scratch.heap.begin(), scratch.heap.end(), after);
}

void Gpt2Bpe::encode(std::string_view piece, std::vector<int32_t>& ids, Scratch& scratch) const {
    if (piece.size() == 1) {
        ids.push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
        return;
    }
    auto& symbols = scratch.symbols;
    const auto count = static_cast<int32_t>(piece.size());
    symbols.resize(piece.size());
    for (int32_t i = 0; i < count; ++i)
        symbols[static_cast<size_t>(i)] = {
            byte_ids_[static_cast<unsigned char>(piece[static_cast<size_t>(i)])], i - 1,
            i + 1 < count ? i + 1 : -1};
    scratch.heap.clear();
    for (int32_t i = 0; i + 1 < count; ++i) push_candidate(scratch, i);
    while (!scratch.heap.empty()) {
        std::pop_heap(scratch.heap.begin(), scratch.heap.end(), after);
        const Candidate candidate = scratch.heap.back();
        scratch.heap.pop_back();
        Scratch::Symbol& left = symbols[static_cast<size_t>(candidate.position)];
        // Stale when either symbol changed since: joined into another, or grown by a merge.
        if (left.id != candidate.left || left.next < 0) continue;
        Scratch::Symbol& right = symbols[static_cast<size_t>(left.next)];
        if (right.id != candidate.right) continue;
        left.id = candidate.result;
        right.id = -1;  // joined into left
        left.next = right.next;
        if (right.next >= 0) symbols[static_cast<size_t>(right.next)].previous = candidate.position;
        if (left.previous >= 0) push_candidate(scratch, left.previous);
        push_candidate(scratch, candidate.position);
    }
    for (int32_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next)
        ids.push_back(symbols[static_cast<size_t>(i)].id);
}

}  // namespace mixgpt
