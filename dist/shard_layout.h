// How ZeRO-1 cuts the parameter arena between W ranks, the way FSDP shards its flat parameters:
// the arena is padded to a multiple of W * kAlignment elements and tiled by units, the ranges its
// collectives run on (the gradient buckets, dist/gradient_buckets.h), each a multiple of
// W * kAlignment long. ncclReduceScatter and ncclAllGather cut a unit into W equal pieces, and
// rank r owns the r-th piece of every unit. Its shard is those pieces in arena order, one after
// another: the layout of the fp32 masters, AdamW moments and mean gradients it keeps. Every
// shard has the same size, every piece starts aligned for vectorized kernels (64 bytes of f32);
// the padding (elements n and above) is zero and stays zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "dist/rank_pieces.h"

namespace mixgpt {

class ShardLayout {
public:
    static constexpr int64_t kAlignment = 16;

    // units: ranges tiling [0, padded_elements(elements, world_size)) in any order, each a
    // multiple of shard_granule(world_size) long.
    ShardLayout(std::vector<ElementRange> units, int64_t elements, int world_size);

    int world_size() const { return world_size_; }
    int64_t elements() const { return elements_; }                     // n, the parameters
    int64_t arena_elements() const { return arena_elements_; }         // n and the padding
    int64_t shard_elements() const { return shard_elements_; }         // every rank's
    const std::vector<ElementRange>& units() const { return units_; }  // ascending
    // Rank r's piece of each unit, ascending: its shard's elements in the arena.
    std::vector<ElementRange> pieces(int rank) const;
    // Every rank's pieces, with the host conversions between shards and arena order.
    RankPieces rank_pieces() const;
    // How many elements of rank's shard lie before arena position `position`.
    int64_t shard_count_below(int rank, int64_t position) const;

    // Host conversions. values (n) in arena order -> rank's shard (shard_elements), padding zero.
    std::vector<float> shard_of(const std::vector<float>& values, int rank) const;
    // Every rank's shard, in rank order (W * shard_elements) -> the n values in arena order.
    std::vector<float> arena_of(const std::vector<float>& shards) const;

private:
    ElementRange piece(const ElementRange& unit, int rank) const;

    int64_t elements_, arena_elements_ = 0, shard_elements_ = 0;
    int world_size_;
    std::vector<ElementRange> units_;
};

// What every unit's length is a multiple of: world_size * ShardLayout::kAlignment.
int64_t shard_granule(int world_size);
// elements rounded up to a multiple of shard_granule(world_size).
int64_t padded_elements(int64_t elements, int world_size);

// Elements per bucket: bucket_bytes / element_bytes rounded down to a multiple of `granule`, at
// least one granule.
int64_t bucket_capacity(size_t element_bytes, size_t bucket_bytes, int64_t granule);

}  // namespace mixgpt
