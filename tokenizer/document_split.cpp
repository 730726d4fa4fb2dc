#include "tokenizer/document_split.h"

#include <algorithm>
#include <cmath>

namespace mixgpt {
namespace {

struct Blocks {
    double fraction, offset;

    int64_t of(int64_t document) const {
        return static_cast<int64_t>(std::floor(static_cast<double>(document) * fraction + offset));
    }
    // The first document of `block`: the smallest d >= 0 with of(d) >= block, found from the
    // estimate and corrected with of() itself, so that rounding cannot disagree with it.
    int64_t first(int64_t block) const {
        int64_t document = std::max<int64_t>(
            0, static_cast<int64_t>(std::ceil((static_cast<double>(block) - offset) / fraction)));
        while (document > 0 && of(document - 1) >= block) --document;
        while (of(document) < block) ++document;
        return document;
    }
};

}  // namespace

uint64_t splitmix64(uint64_t value) {
    uint64_t z = value + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

Split split_of_document(uint64_t seed, int64_t document, double val_fraction) {
    if (val_fraction <= 0) return Split::train;
    const Blocks blocks{val_fraction, static_cast<double>(splitmix64(seed) >> 11) * 0x1.0p-53};
    const int64_t block = blocks.of(document);
    const int64_t first = blocks.first(block);
    const int64_t size = blocks.first(block + 1) - first;
    const auto chosen = static_cast<int64_t>(splitmix64(seed ^ splitmix64(static_cast<uint64_t>(block))) %
                                             static_cast<uint64_t>(size));
    return document == first + chosen ? Split::val : Split::train;
}

}  // namespace mixgpt
