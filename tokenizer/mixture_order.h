// Which dataset each row of a mixture comes from (`train --dataset A --dataset
// B --weights 0.7,0.3`), and which of its windows.
//
// Row n of the global row order (global batch g, rank r, row i: n = g*R*B + r*B + i)
// comes from source k when
//   u_n = (splitmix64(seed ^ 0x6d6978) + n * 0x9e3779b97f4a7c15) mod 2^64
// falls in [t_k, t_{k+1}), with t_k = floor(2^64 * (w_0 + ... + w_{k-1}) / (w_0 + ... + w_{K-1})).
// u_n is a Weyl sequence with the golden ratio's step, so after any n rows each
// source has had n * w_k / sum(w) rows give or take a few (low discrepancy),
// and the choice depends on n only: deterministic, and the same whatever the
// number of ranks.
//
// The j-th row drawn from source k is window p of its train split
// (tokenizer/split_windows.h), in that source's own epochs of W_k windows:
// e = j / W_k, p = epoch_permutation(W_k, splitmix64(seed + k + 1), e)[j mod W_k].
// A loader's position is thus its global batch and each source's row count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mixgpt {

class MixtureOrder {
public:
    MixtureOrder(const std::vector<double>& weights, uint64_t seed);  // weights > 0, finite
    size_t source_of(uint64_t row) const;
    size_t sources() const { return thresholds_.size() + 1; }
    static uint64_t source_seed(uint64_t seed, size_t source);

private:
    uint64_t start_;
    std::vector<uint64_t> thresholds_;  // (K - 1,) t_1 .. t_{K-1}
};

}  // namespace mixgpt
