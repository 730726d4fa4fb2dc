#include "tokenizer/window_order.h"

#include <numeric>
#include <random>
#include <utility>

#include "tokenizer/document_split.h"

namespace mixgpt {
namespace {

uint64_t uniform_below(std::mt19937_64& engine, uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound: values below it would bias
    for (;;) {
        const uint64_t value = engine();
        if (value >= threshold) return value % bound;
    }
}

}  // namespace

int64_t window_count(int64_t tokens, int seq_len) { return tokens > 0 ? (tokens - 1) / seq_len : 0; }

std::vector<int64_t> epoch_permutation(int64_t windows, uint64_t seed, int64_t epoch) {
    std::vector<int64_t> order(static_cast<size_t>(windows));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::mt19937_64 engine(splitmix64(seed ^ splitmix64(static_cast<uint64_t>(epoch))));
    for (int64_t i = windows - 1; i > 0; --i) {
        const auto j = static_cast<int64_t>(uniform_below(engine, static_cast<uint64_t>(i) + 1));
        std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
    }
    return order;
}

}  // namespace mixgpt
