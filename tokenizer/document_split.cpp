#include "tokenizer/document_split.h"

namespace mixgpt {

uint64_t splitmix64(uint64_t value) {
    uint64_t z = value + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

Split split_of_document(uint64_t seed, int64_t document, double val_fraction) {
    const uint64_t bits = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(document)));
    const double uniform = static_cast<double>(bits >> 11) * 0x1.0p-53;
    return uniform < val_fraction ? Split::val : Split::train;
}

}  // namespace mixgpt
