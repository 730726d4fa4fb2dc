// broadcast_checkpoint on 2 ranks: rank 1 receives every field rank 0 read, and an error
// reading on rank 0 becomes the same error on every rank.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/mpi/mpi_test_support.h"
#include "train/checkpoint_broadcast.h"
#include "train/mpi_communicator.h"

namespace mixgpt {
namespace {

using namespace testing_support;

Checkpoint root_checkpoint() {
    Checkpoint checkpoint;
    checkpoint.config.n_layer = 3;
    checkpoint.config.n_embd = 48;
    checkpoint.tokenizer_path = "data/kjv/tokenizer.model";
    checkpoint.tokenizer_sha256 = std::string(64, 'f');
    checkpoint.precision = Precision::fp16;
    checkpoint.step = 17;
    checkpoint.seed = 99;
    checkpoint.tokens_seen = 123456;
    checkpoint.bad_steps_in_a_row = 2;
    checkpoint.parameters = {1.f, 2.f, 3.f};
    checkpoint.working_bits = {7, 8, 9};
    checkpoint.adam_m = {0.5f, 0.25f, 0.125f};
    checkpoint.adam_v = {4.f, 5.f, 6.f};
    checkpoint.status.loss_scale = 1024.f;
    checkpoint.status.skipped_steps = 3;
    checkpoint.loader_state = {1, 2, 3, 4, 5};
    checkpoint.options = {{"lr", "0.0006"}, {"model", "d2"}};
    return checkpoint;
}

TEST(MpiCheckpointBroadcastTest, EveryRankReceivesEveryField) {
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    const Checkpoint want = root_checkpoint();
    const Checkpoint got = broadcast_checkpoint(
        communicator, [] { return root_checkpoint(); }, 0);
    EXPECT_EQ(got.config.n_layer, want.config.n_layer);
    EXPECT_EQ(got.config.n_embd, want.config.n_embd);
    EXPECT_EQ(got.tokenizer_path, want.tokenizer_path);
    EXPECT_EQ(got.tokenizer_sha256, want.tokenizer_sha256);
    EXPECT_EQ(got.precision, want.precision);
    EXPECT_EQ(got.step, want.step);
    EXPECT_EQ(got.seed, want.seed);
    EXPECT_EQ(got.tokens_seen, want.tokens_seen);
    EXPECT_EQ(got.bad_steps_in_a_row, want.bad_steps_in_a_row);
    EXPECT_EQ(got.parameters, want.parameters);
    EXPECT_EQ(got.working_bits, want.working_bits);
    EXPECT_EQ(got.adam_m, want.adam_m);
    EXPECT_EQ(got.adam_v, want.adam_v);
    EXPECT_EQ(got.status.loss_scale, want.status.loss_scale);
    EXPECT_EQ(got.status.skipped_steps, want.status.skipped_steps);
    EXPECT_EQ(got.loader_state, want.loader_state);
    EXPECT_EQ(got.options, want.options);
}

TEST(MpiCheckpointBroadcastTest, ARootErrorIsEveryRanksError) {
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    try {
        broadcast_checkpoint(
            communicator, []() -> Checkpoint { throw Error("ckpt.h5: truncated checkpoint"); }, 0);
        FAIL() << "no error on rank " << world_rank();
    } catch (const Error& error) {
        EXPECT_STREQ(error.what(), "ckpt.h5: truncated checkpoint");
    }
}

}  // namespace
}  // namespace mixgpt
