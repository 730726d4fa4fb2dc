#include "dist/shard_layout.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {

ShardLayout::ShardLayout(std::vector<ElementRange> units, int64_t elements, int world_size)
    : elements_(elements), world_size_(world_size), units_(std::move(units)) {
    MIXGPT_REQUIRE(elements >= 0, "shard layout: negative element count");
    MIXGPT_REQUIRE(world_size >= 1, "shard layout: world size must be at least 1");
    arena_elements_ = padded_elements(elements, world_size);
    std::sort(units_.begin(), units_.end(),
              [](const ElementRange& a, const ElementRange& b) { return a.begin < b.begin; });
    int64_t covered = 0;
    for (const ElementRange& unit : units_) {
        MIXGPT_REQUIRE(
            unit.begin == covered && unit.count() > 0 && unit.count() % shard_granule(world_size) == 0,
            format("shard layout: unit [%lld, %lld) does not continue the tiling at %lld in multiples "
                   "of %lld elements",
                   static_cast<long long>(unit.begin), static_cast<long long>(unit.end),
                   static_cast<long long>(covered), static_cast<long long>(shard_granule(world_size))));
        covered = unit.end;
    }
    MIXGPT_REQUIRE(covered == arena_elements_,
                   format("shard layout: the units cover %lld elements of the %lld-element padded arena",
                          static_cast<long long>(covered), static_cast<long long>(arena_elements_)));
    shard_elements_ = arena_elements_ / world_size;
}

ElementRange ShardLayout::piece(const ElementRange& unit, int rank) const {
    const int64_t size = unit.count() / world_size_;
    return {unit.begin + rank * size, unit.begin + (rank + 1) * size};
}

std::vector<ElementRange> ShardLayout::pieces(int rank) const {
    MIXGPT_REQUIRE(rank >= 0 && rank < world_size_, "shard layout: rank outside the world");
    std::vector<ElementRange> result;
    for (const ElementRange& unit : units_) result.push_back(piece(unit, rank));
    return result;
}

RankPieces ShardLayout::rank_pieces() const {
    std::vector<std::vector<ElementRange>> all;
    for (int rank = 0; rank < world_size_; ++rank) all.push_back(pieces(rank));
    return RankPieces(std::move(all), elements_, arena_elements_);
}

int64_t ShardLayout::shard_count_below(int rank, int64_t position) const {
    int64_t count = 0;
    for (const ElementRange& owned : pieces(rank))
        count += std::clamp<int64_t>(position - owned.begin, 0, owned.count());
    return count;
}

std::vector<float> ShardLayout::shard_of(const std::vector<float>& values, int rank) const {
    return rank_pieces().shard_of(values, rank);
}

std::vector<float> ShardLayout::arena_of(const std::vector<float>& shards) const {
    return rank_pieces().arena_of(shards);
}

int64_t shard_granule(int world_size) { return world_size * ShardLayout::kAlignment; }

int64_t padded_elements(int64_t elements, int world_size) {
    const int64_t granule = shard_granule(world_size);
    return (elements + granule - 1) / granule * granule;
}

int64_t bucket_capacity(size_t element_bytes, size_t bucket_bytes, int64_t granule) {
    MIXGPT_REQUIRE(element_bytes > 0, "bucket ranges: element size must be positive");
    MIXGPT_REQUIRE(granule > 0, "bucket ranges: the granule must be positive");
    return std::max<int64_t>(granule, static_cast<int64_t>(bucket_bytes / element_bytes) / granule * granule);
}

}  // namespace mixgpt
