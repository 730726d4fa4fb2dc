#include "eval/token_choice.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace mixgpt {

void SamplingParams::validate() const {
    MIXGPT_REQUIRE(std::isfinite(temperature) && temperature >= 0, "temperature: must be >= 0");
    MIXGPT_REQUIRE(top_k >= 0, "top-k: must be >= 0");
    MIXGPT_REQUIRE(top_p > 0 && top_p <= 1, "top-p: must lie in (0, 1]");
}

std::vector<double> sampling_distribution(const std::vector<float>& logits, const SamplingParams& params) {
    params.validate();
    MIXGPT_REQUIRE(!logits.empty(), "sampling: no logits");
    const size_t n = logits.size();
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });

    std::vector<double> probabilities(n, 0.0);
    if (params.temperature == 0) {
        probabilities[order[0]] = 1.0;
        return probabilities;
    }
    const size_t kept_by_k = params.top_k > 0 ? std::min(n, static_cast<size_t>(params.top_k)) : n;
    const double top = logits[order[0]];
    double total = 0;
    for (size_t i = 0; i < kept_by_k; ++i) {
        const size_t token = order[i];
        probabilities[token] = std::exp((logits[token] - top) / params.temperature);
        total += probabilities[token];
    }
    size_t kept = 0;
    double mass = 0;
    while (kept < kept_by_k && (kept == 0 || mass < params.top_p * total))
        mass += probabilities[order[kept++]];
    for (size_t i = kept; i < kept_by_k; ++i) probabilities[order[i]] = 0;
    for (size_t i = 0; i < kept; ++i) probabilities[order[i]] /= mass;
    return probabilities;
}

int32_t choose_token(const std::vector<float>& logits, const SamplingParams& params, double uniform) {
    const std::vector<double> probabilities = sampling_distribution(logits, params);
    double cumulative = 0;
    int32_t last_kept = 0;
    for (size_t token = 0; token < probabilities.size(); ++token) {
        if (probabilities[token] == 0) continue;
        cumulative += probabilities[token];
        last_kept = static_cast<int32_t>(token);
        if (uniform < cumulative) return last_kept;
    }
    return last_kept;
}

}  // namespace mixgpt
