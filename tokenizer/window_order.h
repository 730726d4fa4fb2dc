// Which windows a data loader visits, and in what order.
//
// A split of N tokens has W = floor((N - 1) / T) windows; window i is tokens
// [i*T, i*T + T + 1) (inputs and targets of one row).
//
// Train mode: epoch e visits the permutation of [0, W) given by
//   engine = std::mt19937_64(splitmix64(seed ^ splitmix64(e)))   (tokenizer/document_split.h)
//   p = [0, 1, ..., W-1]; for i = W-1 down to 1: swap(p[i], p[uniform(i + 1)])
// where uniform(n) draws r = engine() until r >= (2^64 - n) mod n and returns
// r mod n (unbiased). std::mt19937_64's output is fixed by the C++ standard,
// so the order is the same on every platform.
// Eval mode: windows in order, 0 .. W-1.
//
// Global batch g of an epoch is positions [g*R*B, (g+1)*R*B) of that order
// (R ranks, B rows each); rank r takes the r-th block of B. A train epoch has
// floor(W / (R*B)) global batches (the remainder is not seen that epoch); an
// eval pass has ceil(W / (R*B)), the last possibly partial.
#pragma once

#include <cstdint>
#include <vector>

namespace mixgpt {

int64_t window_count(int64_t tokens, int seq_len);
std::vector<int64_t> epoch_permutation(int64_t windows, uint64_t seed, int64_t epoch);

}  // namespace mixgpt
