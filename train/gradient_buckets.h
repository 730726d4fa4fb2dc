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
#include "train/shard_layout.h"

namespace mixgpt {

struct GradientBucket {
    std::vector<ElementRange> ranges;  // of the gradient arena: ascending, disjoint, none touching
    int ready_stage = 0;               // the backward stage after which all of them are final
    int64_t count() const;
};

// Each stage's tensors (indices into layout.views()) as ranges of the arena, in completion order.
std::vector<std::vector<ElementRange>> stage_ranges(const ParameterLayout& layout,
                                                    const std::vector<std::vector<size_t>>& stages);

// The buckets, in the order they become ready; they cover every element of the stages once.
// bucket_elements >= 1.
std::vector<GradientBucket> plan_gradient_buckets(const std::vector<std::vector<ElementRange>>& stages,
                                                  int64_t bucket_elements);

}  // namespace mixgpt
