// broadcast_checkpoint on 2 ranks: rank 1 receives every field rank 0 read, and an error
// reading on rank 0 becomes the same error on every rank.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/checkpoint_expectations.h"
#include "tests/mpi/mpi_test_support.h"
#include "dist/checkpoint_broadcast.h"
#include "dist/mpi_communicator.h"

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
    checkpoint.spike_guard = SpikeGuardState{{4.25, 4.5}, {1.5, 0.75}, 6, 2};
    checkpoint.options = {{"lr", "0.0006"}, {"model", "d2"}};
    return checkpoint;
}

TEST(MpiCheckpointBroadcastTest, EveryRankReceivesEveryField) {
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    const Checkpoint want = root_checkpoint();
    const Checkpoint got = broadcast_checkpoint(
        communicator, [] { return root_checkpoint(); }, 0);
    test::expect_same_checkpoint(got, want);
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
