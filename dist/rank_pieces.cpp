#include "dist/rank_pieces.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {

RankPieces::RankPieces(std::vector<std::vector<ElementRange>> pieces, int64_t elements,
                       int64_t arena_elements)
    : pieces_(std::move(pieces)), elements_(elements), arena_elements_(arena_elements) {
    MIXGPT_REQUIRE(!pieces_.empty(), "rank pieces: no rank");
    MIXGPT_REQUIRE(elements >= 0 && arena_elements >= elements,
                   "rank pieces: the arena is smaller than the parameters");
    std::vector<ElementRange> all;
    for (const std::vector<ElementRange>& ranges : pieces_) {
        for (size_t k = 0; k < ranges.size(); ++k)
            MIXGPT_REQUIRE(
                ranges[k].begin <= ranges[k].end && (k == 0 || ranges[k - 1].end <= ranges[k].begin),
                "rank pieces: a rank's pieces are not ascending and disjoint");
        all.insert(all.end(), ranges.begin(), ranges.end());
    }
    std::sort(all.begin(), all.end(),
              [](const ElementRange& a, const ElementRange& b) { return a.begin < b.begin; });
    int64_t covered = 0;
    for (const ElementRange& range : all) {
        MIXGPT_REQUIRE(range.begin == covered,
                       format("rank pieces: the pieces do not tile the arena at element %lld",
                              static_cast<long long>(covered)));
        covered = range.end;
    }
    MIXGPT_REQUIRE(covered == arena_elements_,
                   format("rank pieces: the pieces cover %lld of the %lld-element arena",
                          static_cast<long long>(covered), static_cast<long long>(arena_elements_)));
}

const std::vector<ElementRange>& RankPieces::pieces(int rank) const {
    MIXGPT_REQUIRE(rank >= 0 && rank < world_size(), "rank pieces: rank outside the world");
    return pieces_[static_cast<size_t>(rank)];
}

int64_t RankPieces::shard_elements(int rank) const {
    int64_t count = 0;
    for (const ElementRange& piece : pieces(rank)) count += piece.count();
    return count;
}

std::vector<int64_t> RankPieces::shard_sizes() const {
    std::vector<int64_t> sizes;
    for (int rank = 0; rank < world_size(); ++rank) sizes.push_back(shard_elements(rank));
    return sizes;
}

int64_t RankPieces::shard_count_below(int rank, int64_t position) const {
    int64_t count = 0;
    for (const ElementRange& piece : pieces(rank))
        count += std::clamp<int64_t>(position - piece.begin, 0, piece.count());
    return count;
}

std::vector<float> RankPieces::shard_of(const std::vector<float>& values, int rank) const {
    MIXGPT_REQUIRE(static_cast<int64_t>(values.size()) == elements_,
                   "rank pieces: values do not match the parameter count");
    std::vector<float> shard(static_cast<size_t>(shard_elements(rank)), 0.f);
    auto stored = shard.begin();
    for (const ElementRange& piece : pieces(rank)) {
        const int64_t real_end = std::min(piece.end, elements_);
        if (real_end > piece.begin)
            std::copy(values.begin() + piece.begin, values.begin() + real_end, stored);
        stored += piece.count();
    }
    return shard;
}

std::vector<float> RankPieces::arena_of(const std::vector<float>& shards) const {
    int64_t total = 0;
    for (int64_t size : shard_sizes()) total += size;
    MIXGPT_REQUIRE(static_cast<int64_t>(shards.size()) == total,
                   "rank pieces: shards do not match the shard sizes");
    std::vector<float> values(static_cast<size_t>(arena_elements_));
    auto stored = shards.begin();
    for (const std::vector<ElementRange>& ranges : pieces_)
        for (const ElementRange& piece : ranges) {
            std::copy(stored, stored + piece.count(), values.begin() + piece.begin);
            stored += piece.count();
        }
    values.resize(static_cast<size_t>(elements_));
    return values;
}

}  // namespace mixgpt
