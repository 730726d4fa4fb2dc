// Shards and buckets of a parameter arena: for many (n, W), the shards tile [0, n) in rank
// order, start at multiples of 16 elements, differ in size by less than 32, and the per-rank
// counts of any range tile that range; buckets tile [0, n) with the requested size.
#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"
#include "train/shard_layout.h"

namespace mixgpt {
namespace {

TEST(TrainShardLayoutTest, ShardsTileTheArenaAlignedAndBalanced) {
    for (int64_t n : {0, 1, 15, 16, 17, 100, 1000, 12345, 124439808}) {
        for (int world : {1, 2, 3, 7, 8, 16}) {
            const ShardLayout layout(n, world);
            int64_t next = 0, smallest = n, largest = 0;
            for (int r = 0; r < world; ++r) {
                const ElementRange shard = layout.shard(r);
                EXPECT_EQ(shard.begin, next) << "n " << n << ", W " << world << ", rank " << r;
                EXPECT_LE(shard.begin, shard.end);
                EXPECT_EQ(shard.begin % ShardLayout::kAlignment, 0);
                next = shard.end;
                smallest = std::min(smallest, shard.count());
                largest = std::max(largest, shard.count());
            }
            EXPECT_EQ(next, n);
            EXPECT_LT(largest - smallest, 2 * ShardLayout::kAlignment) << "n " << n << ", W " << world;
        }
    }
}

TEST(TrainShardLayoutTest, CountsWithinARangeTileIt) {
    const ShardLayout layout(1000, 3);  // shards [0, 320), [320, 656), [656, 1000)
    EXPECT_EQ(layout.shard(1).begin, 320);
    EXPECT_EQ(layout.shard(2).begin, 656);
    EXPECT_EQ(layout.counts_within({300, 700}), (std::vector<int64_t>{20, 336, 44}));
    EXPECT_EQ(layout.counts_within({700, 800}), (std::vector<int64_t>{0, 0, 100}));
    EXPECT_EQ(layout.counts_within({0, 1000}), (std::vector<int64_t>{320, 336, 344}));
    EXPECT_THROW(layout.counts_within({900, 1001}), Error);
}

TEST(TrainShardLayoutTest, BucketsTileTheArena) {
    const std::vector<ElementRange> buckets = bucket_ranges(10000, sizeof(float), 4096);
    ASSERT_EQ(buckets.size(), 10u);  // 1024 floats per bucket
    for (size_t i = 0; i < buckets.size(); ++i) {
        EXPECT_EQ(buckets[i].begin, static_cast<int64_t>(i) * 1024);
        EXPECT_EQ(buckets[i].end, std::min<int64_t>(10000, static_cast<int64_t>(i + 1) * 1024));
    }
    EXPECT_EQ(bucket_ranges(10000, 2, 4096).size(), 5u);         // 16-bit elements: 2048 per bucket
    EXPECT_EQ(bucket_ranges(100, sizeof(float), 1).size(), 7u);  // at least 16 elements per bucket
    EXPECT_TRUE(bucket_ranges(0, sizeof(float), 4096).empty());
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
