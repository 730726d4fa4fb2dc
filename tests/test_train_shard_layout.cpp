// ZeRO-1's layout of a parameter arena: the arena padded to a multiple of W * 16 elements, units
// (the collectives' ranges) cut into W equal pieces, rank r owning the r-th piece of each, its
// shard those pieces in arena order; conversions between arena order and shards; bucket sizes on
// the grid. Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"
#include "model/parameters.h"
#include "dist/shard_layout.h"

namespace mixgpt {
namespace {

TEST(TrainShardLayoutTest, PadsToAMultipleOfWorldSizeTimesTheAlignment) {
    EXPECT_EQ(shard_granule(3), 48);
    EXPECT_EQ(padded_elements(1000, 3), 1008);  // 21 * 48
    EXPECT_EQ(padded_elements(1008, 3), 1008);
    EXPECT_EQ(padded_elements(0, 8), 0);
    EXPECT_EQ(padded_elements(1, 8), 128);
    // GPT-2 124M (padded vocabulary 50304): every tensor is a multiple of 768 = 3 * 256, so
    // W = 2 and 8 need no padding at all (train/README.md quotes this).
    const int64_t d12 = ParameterLayout(GPTConfig::preset("d12", 50257, 1024)).total();
    EXPECT_EQ(d12, 124475904);
    EXPECT_EQ(padded_elements(d12, 2), d12);
    EXPECT_EQ(padded_elements(d12, 8), d12);
}

// n = 1000, W = 3: arena 1008, units [0, 96), [96, 144), [144, 1008) (given out of order).
ShardLayout three_ranks() { return ShardLayout({{96, 144}, {144, 1008}, {0, 96}}, 1000, 3); }

TEST(TrainShardLayoutTest, RankROwnsTheRthPieceOfEveryUnit) {
    const ShardLayout layout = three_ranks();
    EXPECT_EQ(layout.arena_elements(), 1008);
    EXPECT_EQ(layout.shard_elements(), 336);  // 32 + 16 + 288
    EXPECT_EQ(layout.pieces(0), (std::vector<ElementRange>{{0, 32}, {96, 112}, {144, 432}}));
    EXPECT_EQ(layout.pieces(1), (std::vector<ElementRange>{{32, 64}, {112, 128}, {432, 720}}));
    EXPECT_EQ(layout.pieces(2), (std::vector<ElementRange>{{64, 96}, {128, 144}, {720, 1008}}));
    EXPECT_EQ(layout.shard_count_below(1, 120), 40);  // 32 of [32, 64), 8 of [112, 128)
    EXPECT_EQ(layout.shard_count_below(2, 0), 0);
    EXPECT_EQ(layout.shard_count_below(2, 1008), 336);
    EXPECT_THROW(layout.pieces(3), Error);
}

TEST(TrainShardLayoutTest, ShardsAndArenaOrderConvertBothWays) {
    const ShardLayout layout = three_ranks();
    std::vector<float> values(1000);
    std::iota(values.begin(), values.end(), 1.f);
    std::vector<float> shards;
    for (int rank = 0; rank < 3; ++rank) {
        const std::vector<float> shard = layout.shard_of(values, rank);
        ASSERT_EQ(shard.size(), 336u);
        shards.insert(shards.end(), shard.begin(), shard.end());
    }
    EXPECT_EQ(shards[0], 1.f);      // element 0
    EXPECT_EQ(shards[32], 97.f);    // rank 0's second piece starts at element 96
    EXPECT_EQ(shards[336], 33.f);   // rank 1's shard starts at element 32
    EXPECT_EQ(shards.back(), 0.f);  // element 1007: padding
    EXPECT_EQ(layout.arena_of(shards), values);
    EXPECT_THROW(layout.shard_of(std::vector<float>(999), 0), Error);
    EXPECT_THROW(layout.arena_of(std::vector<float>(1000)), Error);
}

TEST(TrainShardLayoutTest, RefusesUnitsThatDoNotTileThePaddedArenaEvenly) {
    EXPECT_THROW(ShardLayout({{0, 96}, {144, 1008}}, 1000, 3), Error);          // a gap
    EXPECT_THROW(ShardLayout({{0, 100}, {100, 1008}}, 1000, 3), Error);         // 100 is not a multiple of 48
    EXPECT_THROW(ShardLayout({{0, 96}, {96, 960}}, 1000, 3), Error);            // short of the arena
    EXPECT_THROW(ShardLayout({{0, 48}, {0, 48}, {48, 1008}}, 1000, 3), Error);  // overlapping
    EXPECT_NO_THROW(ShardLayout({}, 0, 4));
}

TEST(TrainShardLayoutTest, BucketCapacityIsAWholeNumberOfGranules) {
    EXPECT_EQ(bucket_capacity(sizeof(float), 4096, 16), 1024);
    EXPECT_EQ(bucket_capacity(sizeof(float), 4096, 96), 960);  // 10 granules of 96
    EXPECT_EQ(bucket_capacity(2, 4096, 16), 2048);
    EXPECT_EQ(bucket_capacity(sizeof(float), 1, 32), 32);  // at least one granule
    EXPECT_THROW(bucket_capacity(0, 4096, 16), Error);
}

TEST(TrainShardLayoutTest, SlicesViewTheSameMemory) {
    std::vector<uint16_t> values(10);
    const TensorView all(values.data(), DType::bf16, {10});
    const TensorView part = slice_elements(all, {3, 7});
    EXPECT_EQ(part.data, values.data() + 3);
    EXPECT_EQ(part.numel(), 4);
    EXPECT_EQ(part.dtype, DType::bf16);
    EXPECT_THROW(slice_elements(all, {8, 11}), Error);
}

}  // namespace
}  // namespace mixgpt
