// How a flat arena of n elements is cut for data-parallel training: one contiguous shard per rank
// (ZeRO-1: the elements whose optimizer state that rank keeps and updates), and fixed-size buckets
// (the unit in which gradients are reduced and parameters gathered).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace mixgpt {

struct ElementRange {
    int64_t begin = 0, end = 0;  // [begin, end)
    int64_t count() const { return end - begin; }
};

// Rank r owns [begin(r), end(r)): boundaries at floor(r * n / W) rounded down to a multiple of
// kAlignment elements, so every shard starts aligned for vectorized kernels (64 bytes of f32) and
// shards differ in size by less than 2 * kAlignment. Any n works: nothing is padded, and when
// n < W * kAlignment some shards are empty.
class ShardLayout {
public:
    static constexpr int64_t kAlignment = 16;

    ShardLayout(int64_t elements, int world_size);

    int world_size() const { return world_size_; }
    int64_t elements() const { return elements_; }
    ElementRange shard(int rank) const;
    // Elements of each rank's shard that lie inside `range`, in rank order: the segments a
    // collective on that range exchanges (they tile the range, in order).
    std::vector<int64_t> counts_within(ElementRange range) const;

private:
    int64_t elements_;
    int world_size_;
    std::vector<int64_t> starts_;  // (W + 1) shard boundaries
};

// Elements per bucket: bucket_bytes / element_bytes rounded down to a multiple of
// ShardLayout::kAlignment, at least one alignment unit.
int64_t bucket_capacity(size_t element_bytes, size_t bucket_bytes);
// [0, elements) cut into consecutive buckets of bucket_capacity elements; the last is shorter.
std::vector<ElementRange> bucket_ranges(int64_t elements, size_t element_bytes, size_t bucket_bytes);

// Elements [range.begin, range.end) of a 1-D view, as a 1-D view of the same memory.
TensorView slice_elements(const TensorView& values, ElementRange range);

}  // namespace mixgpt
