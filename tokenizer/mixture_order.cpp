#include "tokenizer/mixture_order.h"

#include <cmath>

#include "core/error.h"
#include "tokenizer/document_split.h"

namespace mixgpt {

MixtureOrder::MixtureOrder(const std::vector<double>& weights, uint64_t seed)
    : start_(splitmix64(seed ^ 0x6d6978ULL)) {
    MIXGPT_REQUIRE(!weights.empty(), "a mixture needs at least one dataset");
    long double total = 0;
    for (double weight : weights) {
        MIXGPT_REQUIRE(std::isfinite(weight) && weight > 0, "dataset weights must be positive and finite");
        total += weight;
    }
    long double cumulative = 0;
    for (size_t k = 0; k + 1 < weights.size(); ++k) {
        cumulative += weights[k];
        thresholds_.push_back(static_cast<uint64_t>(std::ldexp(cumulative / total, 64) >= std::ldexp(1.0L, 64)
                                                        ? ~uint64_t{0}
                                                        : std::ldexp(cumulative / total, 64)));
    }
}

size_t MixtureOrder::source_of(uint64_t row) const {
    const uint64_t u = start_ + row * 0x9e3779b97f4a7c15ULL;
    size_t source = 0;
    while (source < thresholds_.size() && u >= thresholds_[source]) ++source;
    return source;
}

uint64_t MixtureOrder::source_seed(uint64_t seed, size_t source) { return splitmix64(seed + source + 1); }

}  // namespace mixgpt
