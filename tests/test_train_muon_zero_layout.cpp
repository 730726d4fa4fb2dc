// ZeRO-1's layout under --optimizer muon (train/muon_zero_layout.h) and the per-rank pieces it is
// made of (dist/rank_pieces.h): which rank keeps which matrix (round-robin within each shape, as
// nanochat's DistMuon), the AdamW elements packed and cut into equal blocks, shards of different
// sizes converting to and from arena order, and, on one rank, training with it equal to the
// replicated Muon optimizer bit for bit. Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "core/error.h"
#include "dist/shard_layout.h"
#include "model/memory_plan.h"
#include "tests/test_train_support.h"
#include "train/loss_scaling.h"
#include "train/muon_zero_layout.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

using namespace testing_support;

// 2 ranks, 8 parameters and 1 padding element: rank 0 keeps [0, 3) and [7, 9), rank 1 [3, 7).
RankPieces two_ranks() { return RankPieces({{{0, 3}, {7, 9}}, {{3, 7}}}, 8, 9); }

TEST(RankPiecesTest, ShardsOfDifferentSizesConvertBothWays) {
    const RankPieces pieces = two_ranks();
    EXPECT_EQ(pieces.shard_sizes(), (std::vector<int64_t>{5, 4}));
    EXPECT_EQ(pieces.shard_count_below(0, 8), 4);  // [0, 3) and element 7
    const std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8};
    EXPECT_EQ(pieces.shard_of(values, 0), (std::vector<float>{1, 2, 3, 8, 0}));  // the padding is zero
    EXPECT_EQ(pieces.shard_of(values, 1), (std::vector<float>{4, 5, 6, 7}));
    EXPECT_EQ(pieces.arena_of({1, 2, 3, 8, 0, 4, 5, 6, 7}), values);
    EXPECT_THROW(pieces.arena_of({1, 2, 3}), Error);
    EXPECT_THROW(pieces.shard_of({1, 2}, 0), Error);
}

TEST(RankPiecesTest, RefusesPiecesThatDoNotTileTheArena) {
    EXPECT_THROW(RankPieces({{{0, 3}}, {{4, 9}}}, 8, 9), Error);          // a gap at 3
    EXPECT_THROW(RankPieces({{{0, 4}}, {{3, 9}}}, 8, 9), Error);          // overlapping
    EXPECT_THROW(RankPieces({{{0, 3}}, {{3, 8}}}, 8, 9), Error);          // short of the arena
    EXPECT_THROW(RankPieces({{{7, 9}, {0, 3}}, {{3, 7}}}, 8, 9), Error);  // not ascending
}

TEST(RankPiecesTest, ZeroOnesLayoutGivesEqualShards) {
    const ShardLayout layout({{96, 144}, {144, 1008}, {0, 96}}, 1000, 3);
    const RankPieces pieces = layout.rank_pieces();
    EXPECT_EQ(pieces.shard_sizes(), (std::vector<int64_t>{336, 336, 336}));
    EXPECT_EQ(pieces.pieces(1), layout.pieces(1));
}

// tiny_config: 2 layers at C = 32: per layer q, k, v and the attention output (32, 32), the MLP
// input (128, 32) and output (32, 128): 2 * 12 * 1024 = 24576 Muon elements.
TEST(MuonZeroLayoutTest, MatricesGoRoundRobinWithinEachShape) {
    const GPTConfig config = tiny_config();
    const int64_t n = ParameterLayout(config).total();
    const MuonZeroLayout layout(config, 2);
    ASSERT_EQ(layout.shapes().size(), 3u);
    EXPECT_EQ(layout.shapes()[0].matrices.size(), 8u);
    EXPECT_EQ(layout.shapes()[1].rows, 128);
    std::vector<std::string> names;
    for (const MuonMatrix& matrix : layout.shard_groups(0).muon) names.push_back(matrix.name);
    // Shape by shape: the square ones (q, k, v, output of layer 0, then of layer 1), then each MLP shape.
    EXPECT_EQ(names, (std::vector<std::string>{"h.0.attn.c_attn.weight[q]", "h.0.attn.c_attn.weight[v]",
                                               "h.1.attn.c_attn.weight[q]", "h.1.attn.c_attn.weight[v]",
                                               "h.0.mlp.c_fc.weight", "h.0.mlp.c_proj.weight"}));
    names.clear();
    for (const MuonMatrix& matrix : layout.shard_groups(1).muon) names.push_back(matrix.name);
    EXPECT_EQ(names, (std::vector<std::string>{"h.0.attn.c_attn.weight[k]", "h.0.attn.c_proj.weight",
                                               "h.1.attn.c_attn.weight[k]", "h.1.attn.c_proj.weight",
                                               "h.1.mlp.c_fc.weight", "h.1.mlp.c_proj.weight"}));
    // The AdamW elements, n - 24576, padded to a multiple of 2 * 16, in two equal blocks.
    const int64_t adamw = n - 24576, packed = (adamw + 31) / 32 * 32;
    EXPECT_EQ(layout.packed_elements(), packed);
    EXPECT_EQ(layout.arena_elements(), n + packed - adamw);
    for (int rank = 0; rank < 2; ++rank) {
        int64_t block = 0;
        for (const ElementRange& range : layout.block(rank)) block += range.count();
        EXPECT_EQ(block, packed / 2);
        // Every rank keeps 2 + 2 + 4 * 1024 ... its block and 4 square, 1 + 1 oblong matrices.
        EXPECT_EQ(layout.pieces().shard_elements(rank), packed / 2 + 4 * 1024 + 2 * 4096);
        int64_t adamw_kept = 0;
        for (const AdamWGroup& group : layout.shard_groups(rank).adamw) adamw_kept += group.end - group.begin;
        EXPECT_EQ(adamw_kept,
                  rank == 0 ? packed / 2 : packed / 2 - (packed - adamw));  // the padding is rank 1's
    }
    // The staging: the packed vector, 4 chunks of 2 square slots, 1 chunk of 2 slots per oblong shape.
    EXPECT_EQ(layout.staging_elements(), packed + 4 * 2 * 1024 + 2 * 2 * 4096);
}

// 3 ranks: 8 square matrices go 3, 3, 2; the oblong shapes' 2 matrices to ranks 0 and 1; the shard
// groups address the shard: each matrix's offset is where it lies in its rank's shard.
TEST(MuonZeroLayoutTest, ThreeRanksKeepUnequalShardsThatTileTheArena) {
    const GPTConfig config = tiny_config();
    const MuonZeroLayout layout(config, 3);
    const int64_t block = layout.packed_elements() / 3;
    EXPECT_EQ(layout.packed_elements() % 48, 0);
    EXPECT_EQ(layout.pieces().shard_elements(0), block + 3 * 1024 + 2 * 4096);
    EXPECT_EQ(layout.pieces().shard_elements(1), block + 3 * 1024 + 2 * 4096);
    EXPECT_EQ(layout.pieces().shard_elements(2), block + 2 * 1024);
    std::vector<float> values(static_cast<size_t>(ParameterLayout(config).total()));
    std::iota(values.begin(), values.end(), 1.f);  // element i holds i + 1
    std::map<std::string, int64_t> arena_offset;
    for (const MuonShape& shape : layout.shapes())
        for (const MuonMatrix& matrix : shape.matrices) arena_offset[matrix.name] = matrix.offset;
    std::vector<float> shards;
    for (int rank = 0; rank < 3; ++rank) {
        const std::vector<float> shard = layout.pieces().shard_of(values, rank);
        for (const MuonMatrix& matrix : layout.shard_groups(rank).muon) {
            const int64_t last = matrix.rows * matrix.cols - 1;  // the matrix's last element
            EXPECT_EQ(shard[static_cast<size_t>(matrix.offset)],
                      static_cast<float>(arena_offset.at(matrix.name) + 1));
            EXPECT_EQ(shard[static_cast<size_t>(matrix.offset + last)],
                      static_cast<float>(arena_offset.at(matrix.name) + last + 1));
        }
        shards.insert(shards.end(), shard.begin(), shard.end());
    }
    EXPECT_EQ(layout.pieces().arena_of(shards), values);
}

// --dry-run's plan per rank: the largest shard (ranks 0 and 1 of 3), Muon's staging in the exchange.
TEST(MuonZeroLayoutTest, MemoryPlanCountsTheLargestShardAndTheStaging) {
    const GPTConfig config = tiny_config();
    const MuonZeroLayout layout(config, 3);
    const ShardSizes sizes = TrainStep::zero_sizes(config, 3, size_t{1} << 20, true);
    EXPECT_EQ(sizes.shard_elements, layout.pieces().shard_elements(0));
    EXPECT_EQ(sizes.arena_elements, layout.arena_elements());
    EXPECT_EQ(sizes.staging_elements, layout.staging_elements());
    const MemoryPlan plan = plan_memory(config, 2, 16, Precision::fp32, Recompute::none, &sizes);
    EXPECT_EQ(plan.shard_exchange, static_cast<size_t>(sizes.shard_elements + sizes.staging_elements) * 4);
    EXPECT_EQ(TrainStep::zero_sizes(config, 3, size_t{1} << 20, false).staging_elements, 0);
}

// One rank: the exchange is a copy there, and the shard is the arena in another order; every
// update, the working copy, the masters and the momentum equal the replicated optimizer's bit for bit.
TEST(MuonZeroLayoutTest, OneRankTrainsAsTheReplicatedOptimizerBitForBit) {
    const GPTConfig config = tiny_config();
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::bf16);
    SingleProcessCommunicator alone;
    DataParallelConfig parallel;
    parallel.shard_optimizer = true;
    GPT replicated(*backend, config, 2, 16, Recompute::none),
        sharded(*backend, config, 2, 16, Recompute::none, TrainStep::sharding(config, alone, parallel, true));
    load_initial_parameters(replicated, 5);
    load_initial_parameters(sharded, 5);
    MuonPlan muon;
    muon.base_lr = muon.embedding_lr = muon.head_lr = 1e-3f;
    const LossScalePolicy scaling = parse_loss_scale("dynamic", Precision::bf16);
    TrainStep replicated_step(replicated, alone, 1, scaling.config(), scaling.initial_status(), {}, muon);
    TrainStep sharded_step(sharded, alone, 1, scaling.config(), scaling.initial_status(), parallel, muon);
    AdamWHyper hyper;
    hyper.max_grad_norm = 0;
    for (int i = 0; i < 3; ++i) {
        const std::vector<int32_t> windows = random_windows(2, 16, config.vocab_size, 40 + i);
        for (TrainStep* step : {&replicated_step, &sharded_step}) {
            step->begin();
            step->micro_step(windows.data());
            step->finish(hyper, 0.5);
        }
        EXPECT_EQ(sharded_step.result().loss, replicated_step.result().loss);
    }
    EXPECT_EQ(sharded_step.gather_masters(0), read_floats(*backend, replicated.master_parameters()));
    EXPECT_EQ(sharded_step.gather_moments(0).m, replicated_step.gather_moments(0).m);
    EXPECT_EQ(sharded_step.gather_moments(0).v, replicated_step.gather_moments(0).v);
    EXPECT_EQ(sharded_step.read_status().optimizer_steps, 3);
}

}  // namespace
}  // namespace mixgpt
