#include "dist/gradient_buckets.h"

#include <algorithm>

#include "core/error.h"

namespace mixgpt {

namespace {

// Adds a range disjoint from `ranges`, which stay sorted by begin with touching ranges merged.
void add_range(std::vector<ElementRange>& ranges, ElementRange added) {
    ranges.push_back(added);
    std::sort(ranges.begin(), ranges.end(),
              [](const ElementRange& a, const ElementRange& b) { return a.begin < b.begin; });
    std::vector<ElementRange> merged;
    for (const ElementRange& range : ranges) {
        if (!merged.empty() && merged.back().end == range.begin)
            merged.back().end = range.end;
        else
            merged.push_back(range);
    }
    ranges = std::move(merged);
}

}  // namespace

int64_t GradientBucket::count() const {
    int64_t total = 0;
    for (const ElementRange& range : ranges) total += range.count();
    return total;
}

std::vector<std::vector<ElementRange>> stage_ranges(const ParameterLayout& layout,
                                                    const std::vector<std::vector<size_t>>& stages) {
    std::vector<std::vector<ElementRange>> result;
    for (const std::vector<size_t>& stage : stages) {
        std::vector<ElementRange> ranges;
        for (size_t index : stage) {
            const ParameterView& view = layout.views().at(index);
            add_range(ranges, {view.offset, view.offset + view.numel});
        }
        std::reverse(ranges.begin(), ranges.end());  // the high end first
        result.push_back(std::move(ranges));
    }
    return result;
}

std::vector<std::vector<ElementRange>> align_stage_ranges(
    const std::vector<std::vector<ElementRange>>& stages, int64_t granule, int64_t arena_elements) {
    MIXGPT_REQUIRE(granule >= 1 && arena_elements % granule == 0,
                   "gradient buckets: the arena must be a whole number of granules");
    std::vector<int> last_stage(static_cast<size_t>(arena_elements / granule), -1);  // per granule
    for (size_t stage = 0; stage < stages.size(); ++stage)
        for (const ElementRange& range : stages[stage]) {
            MIXGPT_REQUIRE(range.begin >= 0 && range.end <= arena_elements,
                           "gradient buckets: range outside the arena");
            for (int64_t g = range.begin / granule; g * granule < range.end; ++g)
                last_stage[static_cast<size_t>(g)] =
                    std::max(last_stage[static_cast<size_t>(g)], static_cast<int>(stage));
        }
    std::vector<std::vector<ElementRange>> result(stages.size());
    for (int64_t g = static_cast<int64_t>(last_stage.size()) - 1; g >= 0; --g) {
        const int stage = last_stage[static_cast<size_t>(g)];
        MIXGPT_REQUIRE(stage >= 0, "gradient buckets: a granule holds no element of any stage");
        std::vector<ElementRange>& ranges = result[static_cast<size_t>(stage)];
        const int64_t begin = g * granule;
        if (!ranges.empty() && ranges.back().begin == begin + granule)
            ranges.back().begin = begin;
        else
            ranges.push_back({begin, begin + granule});
    }
    return result;
}

std::vector<GradientBucket> plan_gradient_buckets(const std::vector<std::vector<ElementRange>>& stages,
                                                  int64_t bucket_elements) {
    MIXGPT_REQUIRE(bucket_elements >= 1, "gradient buckets: a bucket must hold at least one element");
    std::vector<GradientBucket> buckets;
    GradientBucket open;
    for (size_t stage = 0; stage < stages.size(); ++stage) {
        for (ElementRange range : stages[stage]) {
            // Take the range from its high end: a bucket that continues into the block below
            // then extends the same arena range downwards.
            while (range.count() > 0) {
                const int64_t take = std::min(range.count(), bucket_elements - open.count());
                add_range(open.ranges, {range.end - take, range.end});
                range.end -= take;
                if (open.count() == bucket_elements) {
                    open.ready_stage = static_cast<int>(stage);
                    buckets.push_back(std::move(open));
                    open = GradientBucket();
                }
            }
        }
    }
    if (!open.ranges.empty()) {
        open.ready_stage = static_cast<int>(stages.size()) - 1;
        buckets.push_back(std::move(open));
    }
    return buckets;
}

}  // namespace mixgpt
