// Gradient buckets in the order the backward pass completes the gradients (model/gradient_stages.h),
// so that each bucket's collective can start during the backward pass, as soon as its last
// gradient is final, while the backward pass computes the rest.
//
// The stages' elements are taken in completion order (within a stage from the high end of the
// arena down, the direction consecutive blocks lie in) and cut into buckets of at most
// bucket_elements; a bucket may span stages and so be several ranges of the arena, merged where
// they touch. The same plan on every rank makes every rank issue the same collectives in the same
// order, which both NCCL and MPI require.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/parameters.h"
#include "dist/shard_layout.h"

namespace mixgpt {

struct GradientBucket {
    std::vector<ElementRange> ranges;  // of the gradient arena: ascending, disjoint, none touching
    int ready_stage = 0;               // the backward stage after which all of them are final
    int64_t count() const;
};

// Each stage's tensors (indices into layout.views()) as ranges of the arena, in completion order.
std::vector<std::vector<ElementRange>> stage_ranges(const ParameterLayout& layout,
                                                    const std::vector<std::vector<size_t>>& stages);

// The stages on a grid of `granule` elements, for collectives of equal pieces (ZeRO-1,
// dist/shard_layout.h): each granule of [0, arena_elements) belongs to the last stage that
// completes any of its elements, so it is final when that stage is; within a stage, the high end
// first. Every granule must hold an element of some stage.
std::vector<std::vector<ElementRange>> align_stage_ranges(
    const std::vector<std::vector<ElementRange>>& stages, int64_t granule, int64_t arena_elements);

// The buckets, in the order they become ready; they cover every element of the stages once.
// bucket_elements >= 1. When every stage range and bucket_elements are multiples of a granule, so
// is every range of every bucket.
std::vector<GradientBucket> plan_gradient_buckets(const std::vector<std::vector<ElementRange>>& stages,
                                                  int64_t bucket_elements);

}  // namespace mixgpt
