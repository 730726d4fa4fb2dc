// The backward pass's completion stages and the gradient buckets planned from them: every tensor
// completes in exactly one stage (ln_f first, the blocks from the last, the embeddings last);
// buckets cover every element once, hold at most their capacity, become ready at the last stage
// any of their elements comes from, and for GPT-2 124M most of them are ready before the
// backward pass ends, also on ZeRO-1's grid of equal pieces. That the stages are right for the backward pass
// itself is checked in tests/test_train_data_parallel.cpp, against the gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "core/error.h"
#include "model/gradient_stages.h"
#include "dist/gradient_buckets.h"

namespace mixgpt {
namespace {

GPTConfig gpt2_small() { return GPTConfig::preset("d12", 50257, 1024); }

TEST(TrainGradientBucketsTest, EveryTensorCompletesInOneStage) {
    const GPTConfig config = gpt2_small();
    const ParameterLayout layout(config);
    const std::vector<std::vector<size_t>> stages = gradient_stages(layout, config.n_layer);
    ASSERT_EQ(stages.size(), static_cast<size_t>(config.n_layer) + 2);
    std::map<std::string, size_t> stage_of;
    for (size_t s = 0; s < stages.size(); ++s)
        for (size_t index : stages[s]) EXPECT_TRUE(stage_of.emplace(layout.views()[index].name, s).second);
    EXPECT_EQ(stage_of.size(), layout.views().size());
    EXPECT_EQ(stage_of["ln_f.bias"], 0u);
    EXPECT_EQ(stage_of["h.11.mlp.c_proj.weight"], 1u);
    EXPECT_EQ(stage_of["h.11.ln_1.weight"], 1u);
    EXPECT_EQ(stage_of["h.0.attn.c_attn.bias"], 12u);
    EXPECT_EQ(stage_of["wte"], 13u);
    EXPECT_EQ(stage_of["wpe"], 13u);
    for (size_t s = 1; s <= 12; ++s) EXPECT_EQ(stages[s].size(), 12u) << "stage " << s;
}

// Checks the plan's invariants against the stages it came from.
void expect_valid_plan(const std::vector<std::vector<ElementRange>>& stages,
                       const std::vector<GradientBucket>& buckets, int64_t capacity) {
    std::map<int64_t, int> stage_of;  // element -> stage, for the small cases
    int64_t total = 0;
    for (size_t s = 0; s < stages.size(); ++s)
        for (const ElementRange& range : stages[s]) {
            total += range.count();
            for (int64_t i = range.begin; i < range.end; ++i) stage_of[i] = static_cast<int>(s);
        }
    std::set<int64_t> seen;
    int previous_ready = 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
        const GradientBucket& bucket = buckets[b];
        EXPECT_LE(bucket.count(), capacity);
        if (b + 1 < buckets.size()) {
            EXPECT_EQ(bucket.count(), capacity) << "only the last bucket is short";
        }
        EXPECT_GE(bucket.ready_stage, previous_ready);
        previous_ready = bucket.ready_stage;
        int latest = 0;
        for (size_t r = 0; r < bucket.ranges.size(); ++r) {
            const ElementRange& range = bucket.ranges[r];
            for (size_t q = 0; q < r; ++q)
                EXPECT_TRUE(bucket.ranges[q].end != range.begin && bucket.ranges[q].begin != range.end)
                    << "touching ranges are merged";
            for (int64_t i = range.begin; i < range.end; ++i) {
                EXPECT_TRUE(seen.insert(i).second) << "element " << i << " twice";
                latest = std::max(latest, stage_of.at(i));
            }
        }
        EXPECT_EQ(bucket.ready_stage, latest) << "bucket " << b;
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), total);
}

TEST(TrainGradientBucketsTest, BucketsCoverEveryElementOnceAndAreReadyWithTheirLastStage) {
    const std::vector<std::vector<ElementRange>> stages = {
        {{90, 100}}, {{60, 90}, {10, 20}}, {}, {{20, 60}, {0, 10}}};
    for (int64_t capacity : {1, 7, 16, 30, 40, 99, 100, 1000}) {
        SCOPED_TRACE(capacity);
        expect_valid_plan(stages, plan_gradient_buckets(stages, capacity), capacity);
    }
    EXPECT_THROW(plan_gradient_buckets(stages, 0), Error);
}

TEST(TrainGradientBucketsTest, ConsecutiveBlocksShareARange) {
    // Block 1 at [40, 60) completes before block 0 at [20, 40): one bucket of 30 takes [30, 60).
    const std::vector<std::vector<ElementRange>> stages = {{{40, 60}}, {{20, 40}}};
    const std::vector<GradientBucket> buckets = plan_gradient_buckets(stages, 30);
    ASSERT_EQ(buckets.size(), 2u);
    ASSERT_EQ(buckets[0].ranges.size(), 1u);
    EXPECT_EQ(buckets[0].ranges[0].begin, 30);
    EXPECT_EQ(buckets[0].ranges[0].end, 60);
    EXPECT_EQ(buckets[0].ready_stage, 1);
}

TEST(TrainGradientBucketsTest, MostOfGpt2SmallIsReadyBeforeTheBackwardPassEnds) {
    const GPTConfig config = gpt2_small();
    const ParameterLayout layout(config);
    const std::vector<std::vector<ElementRange>> stages =
        stage_ranges(layout, gradient_stages(layout, config.n_layer));
    const int64_t capacity = bucket_capacity(sizeof(float), size_t{25} << 20, ShardLayout::kAlignment);
    const std::vector<GradientBucket> buckets = plan_gradient_buckets(stages, capacity);
    int64_t covered = 0, ready_early = 0;
    for (const GradientBucket& bucket : buckets) {
        covered += bucket.count();
        if (bucket.ready_stage < config.n_layer + 1) ready_early += bucket.count();
    }
    EXPECT_EQ(covered, layout.total());
    // Everything but wte, wpe (and the bucket they share with block 0) can overlap the backward pass.
    const int64_t embeddings = layout.find("wte").numel + layout.find("wpe").numel;
    EXPECT_GE(ready_early, layout.total() - embeddings - capacity);
    for (const GradientBucket& bucket : buckets) EXPECT_LE(bucket.ranges.size(), 3u);
}

// ZeRO-1's grid: each granule goes to the last stage that completes any of its elements.
TEST(TrainGradientBucketsTest, AlignedStagesGiveEachGranuleToItsLastStage) {
    EXPECT_EQ(align_stage_ranges({{{20, 40}}, {{0, 20}}}, 16, 48),
              (std::vector<std::vector<ElementRange>>{{{32, 48}}, {{0, 32}}}));
    EXPECT_EQ(align_stage_ranges({{{0, 10}, {30, 40}}, {{10, 30}}}, 16, 48),
              (std::vector<std::vector<ElementRange>>{{{32, 48}}, {{0, 32}}}));
    EXPECT_THROW(align_stage_ranges({{{0, 10}}}, 16, 48), Error);  // granules 1 and 2 hold nothing
    EXPECT_THROW(align_stage_ranges({{{0, 10}}}, 16, 40), Error);  // not a whole number of granules
}

// GPT-2 124M under ZeRO-1 with 8 ranks: every bucket range splits into 8 equal, aligned pieces,
// the padded arena is covered once, and as much overlaps the backward pass as without the grid.
TEST(TrainGradientBucketsTest, ZeroBucketsOfGpt2SmallSplitEvenlyAndStillOverlap) {
    const GPTConfig config = gpt2_small();
    const ParameterLayout layout(config);
    const int world_size = 8;
    const int64_t granule = shard_granule(world_size), arena = padded_elements(layout.total(), world_size);
    const int64_t capacity = bucket_capacity(sizeof(float), size_t{25} << 20, granule);
    const std::vector<GradientBucket> buckets = plan_gradient_buckets(
        align_stage_ranges(stage_ranges(layout, gradient_stages(layout, config.n_layer)), granule, arena),
        capacity);
    int64_t covered = 0, ready_early = 0;
    for (const GradientBucket& bucket : buckets) {
        covered += bucket.count();
        if (bucket.ready_stage < config.n_layer + 1) ready_early += bucket.count();
        for (const ElementRange& range : bucket.ranges) {
            EXPECT_EQ(range.begin % granule, 0);
            EXPECT_EQ(range.count() % granule, 0);
        }
    }
    EXPECT_EQ(covered, arena);
    const int64_t embeddings = layout.find("wte").numel + layout.find("wpe").numel;
    EXPECT_GE(ready_early, layout.total() - embeddings - capacity);
}

}  // namespace
}  // namespace mixgpt
