#include "train/shard_layout.h"

#include <algorithm>

#include "core/error.h"

namespace mixgpt {

ShardLayout::ShardLayout(int64_t elements, int world_size) : elements_(elements), world_size_(world_size) {
    MIXGPT_REQUIRE(elements >= 0, "shard layout: negative element count");
    MIXGPT_REQUIRE(world_size >= 1, "shard layout: world size must be at least 1");
    starts_.resize(static_cast<size_t>(world_size) + 1);
    for (int r = 0; r < world_size; ++r) {
        // r * n / W without overflow for any realistic n and W.
        const int64_t even = static_cast<int64_t>(static_cast<__int128>(elements) * r / world_size);
        starts_[static_cast<size_t>(r)] = even / kAlignment * kAlignment;
    }
    starts_.back() = elements;
}

ElementRange ShardLayout::shard(int rank) const {
    MIXGPT_REQUIRE(rank >= 0 && rank < world_size_, "shard layout: rank outside the world");
    return {starts_[static_cast<size_t>(rank)], starts_[static_cast<size_t>(rank) + 1]};
}

std::vector<int64_t> ShardLayout::counts_within(ElementRange range) const {
    MIXGPT_REQUIRE(range.begin >= 0 && range.begin <= range.end && range.end <= elements_,
                   "shard layout: range outside the arena");
    std::vector<int64_t> counts(static_cast<size_t>(world_size_));
    for (int r = 0; r < world_size_; ++r) {
        const ElementRange owned = shard(r);
        counts[static_cast<size_t>(r)] =
            std::max<int64_t>(0, std::min(range.end, owned.end) - std::max(range.begin, owned.begin));
    }
    return counts;
}

int64_t bucket_capacity(size_t element_bytes, size_t bucket_bytes) {
    MIXGPT_REQUIRE(element_bytes > 0, "bucket ranges: element size must be positive");
    return std::max<int64_t>(ShardLayout::kAlignment, static_cast<int64_t>(bucket_bytes / element_bytes) /
                                                          ShardLayout::kAlignment * ShardLayout::kAlignment);
}

std::vector<ElementRange> bucket_ranges(int64_t elements, size_t element_bytes, size_t bucket_bytes) {
    const int64_t per_bucket = bucket_capacity(element_bytes, bucket_bytes);
    std::vector<ElementRange> buckets;
    for (int64_t begin = 0; begin < elements; begin += per_bucket)
        buckets.push_back({begin, std::min(elements, begin + per_bucket)});
    return buckets;
}

TensorView slice_elements(const TensorView& values, ElementRange range) {
    MIXGPT_REQUIRE(values.rank == 1, "slice_elements: expects a 1-D view, got " + values.shape_string());
    MIXGPT_REQUIRE(range.begin >= 0 && range.begin <= range.end && range.end <= values.numel(),
                   "slice_elements: range outside the view");
    char* first =
        static_cast<char*>(values.data) + static_cast<size_t>(range.begin) * dtype_size(values.dtype);
    return TensorView(first, values.dtype, {range.count()});
}

}  // namespace mixgpt
