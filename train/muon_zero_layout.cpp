#include "train/muon_zero_layout.h"

#include <algorithm>

#include "core/error.h"
#include "dist/shard_layout.h"

namespace mixgpt {
namespace {

int checked_world_size(int world_size) {
    MIXGPT_REQUIRE(world_size >= 1, "muon zero layout: world size must be at least 1");
    return world_size;
}

int64_t adamw_count(const ParameterGroups& groups) {
    int64_t count = 0;
    for (const AdamWGroup& group : groups.adamw) count += group.end - group.begin;
    return count;
}

// The AdamW groups' ranges, neighbours merged, then the padding [n, n + packed - count).
std::vector<ElementRange> packed_ranges_of(const ParameterGroups& groups, int64_t n, int64_t padding) {
    std::vector<ElementRange> ranges;
    for (const AdamWGroup& group : groups.adamw) {
        if (!ranges.empty() && ranges.back().end == group.begin)
            ranges.back().end = group.end;
        else
            ranges.push_back({group.begin, group.end});
    }
    if (padding > 0) ranges.push_back({n, n + padding});
    return ranges;
}

std::vector<MuonShape> shapes_of(const std::vector<MuonMatrix>& matrices) {
    std::vector<MuonShape> shapes;
    for (const MuonMatrix& matrix : matrices) {
        auto shape = std::find_if(shapes.begin(), shapes.end(), [&](const MuonShape& s) {
            return s.rows == matrix.rows && s.cols == matrix.cols;
        });
        if (shape == shapes.end())
            shape = shapes.insert(shapes.end(), MuonShape{matrix.rows, matrix.cols, {}});
        shape->matrices.push_back(matrix);
    }
    return shapes;
}

// [begin, end) of the packed vector as arena ranges.
std::vector<ElementRange> arena_ranges(const std::vector<ElementRange>& packed, int64_t begin, int64_t end) {
    std::vector<ElementRange> result;
    int64_t position = 0;  // of the current range in the packed vector
    for (const ElementRange& range : packed) {
        const int64_t from = std::max(begin, position), to = std::min(end, position + range.count());
        if (from < to) result.push_back({range.begin + from - position, range.begin + to - position});
        position += range.count();
    }
    return result;
}

std::vector<ElementRange> intersect(const std::vector<ElementRange>& ranges, ElementRange with) {
    std::vector<ElementRange> result;
    for (const ElementRange& range : ranges) {
        const ElementRange both{std::max(range.begin, with.begin), std::min(range.end, with.end)};
        if (both.begin < both.end) result.push_back(both);
    }
    return result;
}

}  // namespace

MuonZeroLayout::MuonZeroLayout(const GPTConfig& config, int world_size)
    : world_size_(checked_world_size(world_size)),
      groups_(muon_parameter_groups(config, ParameterLayout(config))),
      packed_elements_(padded_elements(adamw_count(groups_), world_size)),
      packed_ranges_(packed_ranges_of(groups_, ParameterLayout(config).total(),
                                      packed_elements_ - adamw_count(groups_))),
      shapes_(shapes_of(groups_.muon)),
      pieces_(kept_pieces(), ParameterLayout(config).total(),
              ParameterLayout(config).total() + packed_elements_ - adamw_count(groups_)) {}

std::vector<std::vector<ElementRange>> MuonZeroLayout::kept_pieces() const {
    std::vector<std::vector<ElementRange>> pieces;
    for (int rank = 0; rank < world_size_; ++rank) {
        std::vector<ElementRange> kept = block(rank);
        for (const MuonShape& shape : shapes_)
            for (size_t k = static_cast<size_t>(rank); k < shape.matrices.size();
                 k += static_cast<size_t>(world_size_))
                kept.push_back(
                    {shape.matrices[k].offset, shape.matrices[k].offset + shape.rows * shape.cols});
        std::sort(kept.begin(), kept.end(),
                  [](const ElementRange& a, const ElementRange& b) { return a.begin < b.begin; });
        pieces.push_back(std::move(kept));
    }
    return pieces;
}

std::vector<ElementRange> MuonZeroLayout::block(int rank) const {
    MIXGPT_REQUIRE(rank >= 0 && rank < world_size_, "muon zero layout: rank outside the world");
    const int64_t size = packed_elements_ / world_size_;
    return arena_ranges(packed_ranges_, rank * size, (rank + 1) * size);
}

ParameterGroups MuonZeroLayout::shard_groups(int rank) const {
    ParameterGroups groups;
    const std::vector<ElementRange> kept = block(rank);
    for (const AdamWGroup& group : groups_.adamw)
        for (const ElementRange& part : intersect(kept, {group.begin, group.end})) {
            const int64_t begin = pieces_.shard_count_below(rank, part.begin);
            groups.adamw.push_back({begin, begin + part.count(), group.rate, group.decay});
        }
    for (const MuonShape& shape : shapes_)
        for (size_t k = static_cast<size_t>(rank); k < shape.matrices.size();
             k += static_cast<size_t>(world_size_)) {
            MuonMatrix matrix = shape.matrices[k];
            matrix.offset = pieces_.shard_count_below(rank, matrix.offset);
            groups.muon.push_back(matrix);
        }
    std::sort(groups.adamw.begin(), groups.adamw.end(),
              [](const AdamWGroup& a, const AdamWGroup& b) { return a.begin < b.begin; });
    return groups;
}

int64_t MuonZeroLayout::staging_elements() const {
    int64_t elements = packed_elements_;
    for (const MuonShape& shape : shapes_)
        elements += shape.chunks(world_size_) * world_size_ * shape.rows * shape.cols;
    return elements;
}

}  // namespace mixgpt
