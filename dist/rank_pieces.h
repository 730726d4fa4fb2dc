// What each of W ranks keeps of a parameter arena (n parameters and zero padding up to
// arena_elements): its pieces, ascending ranges of the arena, stored one after another as its
// shard (fp32 masters, optimizer state, mean gradients). The pieces of all ranks tile the arena
// once. ZeRO-1's layout (dist/shard_layout.h) gives every rank an equal piece of every unit; under
// --optimizer muon (train/muon_zero_layout.h) a rank keeps whole matrices and a block of the AdamW
// elements, so shards differ in size. The host conversions here keep checkpoints in arena order,
// whatever the rank count.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace mixgpt {

class RankPieces {
public:
    // pieces[r]: rank r's ranges, ascending and disjoint; all ranks' together tile [0, arena_elements).
    RankPieces(std::vector<std::vector<ElementRange>> pieces, int64_t elements, int64_t arena_elements);

    int world_size() const { return static_cast<int>(pieces_.size()); }
    int64_t elements() const { return elements_; }              // n, the parameters
    int64_t arena_elements() const { return arena_elements_; }  // n and the padding
    const std::vector<ElementRange>& pieces(int rank) const;
    int64_t shard_elements(int rank) const;
    std::vector<int64_t> shard_sizes() const;  // every rank's, in rank order
    // How many elements of rank's shard lie before arena position `position`.
    int64_t shard_count_below(int rank, int64_t position) const;

    // values (n) in arena order -> rank's shard (shard_elements(rank)), padding zero.
    std::vector<float> shard_of(const std::vector<float>& values, int rank) const;
    // Every rank's shard, in rank order (the sum of shard_sizes()) -> the n values in arena order.
    std::vector<float> arena_of(const std::vector<float>& shards) const;

private:
    std::vector<std::vector<ElementRange>> pieces_;
    int64_t elements_, arena_elements_;
};

}  // namespace mixgpt
