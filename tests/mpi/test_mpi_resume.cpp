// Checkpoints do not depend on the number of ranks (CPU backend, FP32, the tiny dataset):
// - 2 ranks x B=2 (ZeRO-1) save at step 2; resumed on 1 rank x B=4, and on 2 ranks with the
//   optimizer replicated, steps 3-4 give the losses and weights of the uninterrupted 2-rank run
//   (relative error <= 1e-6: only the summation order differs);
// - resumed on 2 ranks with ZeRO-1 again, they are bit-identical;
// - 1 rank x B=2 x 2 accumulation steps saves at step 2; resumed on 2 ranks x B=2 (ZeRO-1, the
//   loader's position converted from global batches of 2 windows to 4), steps 3-4 match the
//   uninterrupted 1-rank run (<= 1e-6).
// - bf16 and fp8 with ZeRO-1 (fp32 masters kept per shard; fp8's scaling state the same on every
//   rank) resume on 2 ranks bit for bit;
// - at width 20, where ZeRO-1 pads the arena for 2 ranks, the checkpoint holds the parameters
//   without the padding, and resumes on 1 rank (<= 1e-6) and on 2 ranks (bit for bit).
// The 1-rank runs are rank 0 alone, with a SingleProcessCommunicator, while rank 1 waits.
#include <gtest/gtest.h>

#include <filesystem>

#include "dist/shard_layout.h"
#include "model/checkpoint.h"
#include "model/parameters.h"
#include "tests/checkpoint_expectations.h"
#include "tests/mpi/mpi_test_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;

TrainOptions run_options(const std::string& output_dir, int batch_size, bool zero) {
    TrainOptions options = tiny_train_options(output_dir);
    options.dataset = shared_tiny_dataset_path();
    options.batch_size = batch_size;
    options.steps = kSteps;
    options.checkpoint_interval = kSaveStep;
    options.eval_batches = 2;
    options.zero_optimizer = zero;
    options.bucket_mb = 1.0 / 256;  // 4 KiB
    options.collective_timeout = kTestCollectiveTimeout;
    return options;
}

// Losses of steps after kSaveStep: those of `resumed` against those of `straight`.
void expect_same_later_losses(const std::string& resumed, const std::string& straight, double tolerance) {
    if (world_rank() != 0) return;
    const std::map<int64_t, double> got = train_losses(metrics_path(resumed)),
                                    expected = train_losses(metrics_path(straight));
    ASSERT_EQ(expected.size(), static_cast<size_t>(kSteps));
    for (int64_t step = kSaveStep + 1; step <= kSteps; ++step) {
        ASSERT_TRUE(got.count(step)) << "step " << step;
        EXPECT_NEAR(got.at(step), expected.at(step), tolerance * expected.at(step)) << "step " << step;
    }
}

std::vector<float> final_parameters(const std::string& run_dir) {
    return read_checkpoint(checkpoint_path(checkpoint_directory(run_dir), kSteps)).parameters;
}

TEST(DataParallelResumeTest, TwoRankCheckpointsResumeOnOneOrTwoRanks) {
    SharedTempDirectory directory("mixgpt_mpi_resume_two");
    const std::string two = directory.file("two");
    const TrainResult straight = run_training(run_options(two, 2, true));
    EXPECT_EQ(straight.steps_done, kSteps);

    const std::string one = directory.file("one_from_two");
    seed_run_directory(two, one);
    on_rank0_alone([&] {
        TrainOptions options = run_options(one, 4, false);
        options.resume = "auto";
        SingleProcessCommunicator alone;
        const TrainResult resumed = run_training(options, alone);
        EXPECT_EQ(resumed.steps_done, kSteps);
        EXPECT_NEAR(resumed.last_val_loss, straight.last_val_loss, 1e-6 * straight.last_val_loss);
        EXPECT_LE(relative_error(final_parameters(one), final_parameters(two)), 1e-6);
    });
    expect_same_later_losses(one, two, 1e-6);

    const std::string replicated = directory.file("replicated_from_zero");
    seed_run_directory(two, replicated);
    TrainOptions options = run_options(replicated, 2, false);
    options.resume = "auto";
    run_training(options);
    expect_same_later_losses(replicated, two, 1e-6);
    if (world_rank() == 0) {
        EXPECT_LE(relative_error(final_parameters(replicated), final_parameters(two)), 1e-6);
    }

    const std::string again = directory.file("zero_from_zero");
    seed_run_directory(two, again);
    options = run_options(again, 2, true);
    options.resume = "auto";
    const TrainResult resumed = run_training(options);
    EXPECT_EQ(resumed.last_val_loss, straight.last_val_loss);
    if (world_rank() == 0) {
        EXPECT_EQ(train_losses(metrics_path(again)).at(kSteps), train_losses(metrics_path(two)).at(kSteps));
        const Checkpoint got = read_checkpoint(checkpoint_path(checkpoint_directory(again), kSteps));
        const Checkpoint expected = read_checkpoint(checkpoint_path(checkpoint_directory(two), kSteps));
        test::expect_same_training_state(got, expected);
    }
}

// --optimizer muon, replicated: a 2-rank checkpoint (Muon's momentum in m) resumes on 2 ranks bit
// for bit, and on one rank of twice the batch up to float summation order. The iteration in fp32:
// in bf16 the gradients' last bits, which the rank count changes, flip roundings of X (4e-4
// relative in the weights after two steps).
TEST(DataParallelResumeTest, MuonCheckpointsResumeOnTwoRanksExactlyAndOnOne) {
    SharedTempDirectory directory("mixgpt_mpi_resume_muon");
    const auto muon_options = [](const std::string& output_dir, int batch_size) {
        TrainOptions options = run_options(output_dir, batch_size, false);
        options.optimizer = OptimizerKind::muon;
        options.muon_ns_dtype = DType::f32;
        return options;
    };
    const std::string two = directory.file("two");
    const TrainResult straight = run_training(muon_options(two, 2));
    EXPECT_EQ(straight.steps_done, kSteps);

    const std::string again = directory.file("two_again");
    seed_run_directory(two, again);
    TrainOptions options = muon_options(again, 2);
    options.resume = "auto";
    const TrainResult resumed = run_training(options);
    EXPECT_EQ(resumed.last_val_loss, straight.last_val_loss);
    if (world_rank() == 0) {
        const Checkpoint got = read_checkpoint(checkpoint_path(checkpoint_directory(again), kSteps));
        const Checkpoint expected = read_checkpoint(checkpoint_path(checkpoint_directory(two), kSteps));
        test::expect_same_training_state(got, expected);
    }

    const std::string one = directory.file("one_from_two");
    seed_run_directory(two, one);
    on_rank0_alone([&] {
        TrainOptions alone_options = muon_options(one, 4);
        alone_options.resume = "auto";
        SingleProcessCommunicator alone;
        EXPECT_EQ(run_training(alone_options, alone).steps_done, kSteps);
        EXPECT_LE(relative_error(final_parameters(one), final_parameters(two)), 1e-6);
    });
    expect_same_later_losses(one, two, 1e-6);
}

// bf16 with ZeRO-1: each rank keeps the fp32 masters of its shard only; the checkpoint gathers
// them, and a 2-rank resume reloads each rank's shard and the whole working copy: bit-exact.
// fp8 (delayed scaling) too: the checkpoint keeps one rank's scaling state, which is every rank's
// because the ranks' newest amaxes are reduced to their maximum before each update (were they
// not, rank 1 would resume with rank 0's scales and the later steps would differ).
class ShardedResumeTest : public ::testing::TestWithParam<Precision> {};

TEST_P(ShardedResumeTest, ShardedMastersResumeBitExact) {
    SharedTempDirectory directory("mixgpt_mpi_resume_sharded");
    const std::string straight_dir = directory.file("straight");
    TrainOptions options = run_options(straight_dir, 2, true);
    options.precision = GetParam();
    const TrainResult straight = run_training(options);
    EXPECT_EQ(straight.steps_done, kSteps);

    const std::string again = directory.file("again");
    seed_run_directory(straight_dir, again);
    options.output_dir = again;
    options.resume = "auto";
    const TrainResult resumed = run_training(options);
    EXPECT_EQ(resumed.last_val_loss, straight.last_val_loss);
    if (world_rank() == 0) {
        const Checkpoint got = read_checkpoint(checkpoint_path(checkpoint_directory(again), kSteps));
        const Checkpoint expected =
            read_checkpoint(checkpoint_path(checkpoint_directory(straight_dir), kSteps));
        test::expect_same_training_state(got, expected);
        EXPECT_EQ(got.fp8_scaling, expected.fp8_scaling);
    }
}

INSTANTIATE_TEST_SUITE_P(Precisions, ShardedResumeTest, ::testing::Values(Precision::bf16, Precision::fp8),
                         [](const ::testing::TestParamInfo<Precision>& info) {
                             return std::string(precision_name(info.param));
                         });

TEST(DataParallelResumeTest, PaddedArenaCheckpointsHoldNoPaddingAndResumeOnOneOrTwoRanks) {
    SharedTempDirectory directory("mixgpt_mpi_resume_padded");
    const auto padded_options = [](const std::string& output_dir, int batch_size, bool zero) {
        TrainOptions options = run_options(output_dir, batch_size, zero);
        options.model.n_embd = 20;
        return options;
    };
    const std::string two = directory.file("two");
    const TrainResult straight = run_training(padded_options(two, 2, true));
    EXPECT_EQ(straight.steps_done, kSteps);
    if (world_rank() == 0) {
        const Checkpoint saved = read_checkpoint(checkpoint_path(checkpoint_directory(two), kSaveStep));
        const int64_t n = ParameterLayout(saved.config).total();
        EXPECT_NE(n % (2 * ShardLayout::kAlignment), 0) << "the arena should need padding";
        EXPECT_EQ(static_cast<int64_t>(saved.parameters.size()), n);
        EXPECT_EQ(static_cast<int64_t>(saved.adam_v.size()), n);
    }

    const std::string one = directory.file("one_from_two");
    seed_run_directory(two, one);
    on_rank0_alone([&] {
        TrainOptions options = padded_options(one, 4, false);
        options.resume = "auto";
        SingleProcessCommunicator alone;
        EXPECT_EQ(run_training(options, alone).steps_done, kSteps);
        EXPECT_LE(relative_error(final_parameters(one), final_parameters(two)), 1e-6);
    });
    expect_same_later_losses(one, two, 1e-6);

    const std::string again = directory.file("two_from_two");
    seed_run_directory(two, again);
    TrainOptions options = padded_options(again, 2, true);
    options.resume = "auto";
    EXPECT_EQ(run_training(options).last_val_loss, straight.last_val_loss);
    if (world_rank() == 0) {
        const Checkpoint got = read_checkpoint(checkpoint_path(checkpoint_directory(again), kSteps));
        const Checkpoint expected = read_checkpoint(checkpoint_path(checkpoint_directory(two), kSteps));
        test::expect_same_training_state(got, expected);
    }
}

TEST(DataParallelResumeTest, OneRankCheckpointsResumeOnTwoRanks) {
    SharedTempDirectory directory("mixgpt_mpi_resume_one");
    const std::string one = directory.file("one");
    on_rank0_alone([&] {
        TrainOptions options = run_options(one, 2, false);
        options.total_batch_tokens = 4 * options.seq_len;  // 2 accumulation steps
        SingleProcessCommunicator alone;
        EXPECT_EQ(run_training(options, alone).steps_done, kSteps);
    });

    const std::string two = directory.file("two_from_one");
    seed_run_directory(one, two);
    TrainOptions options = run_options(two, 2, true);
    options.resume = "auto";
    const TrainResult resumed = run_training(options);
    EXPECT_EQ(resumed.steps_done, kSteps);
    expect_same_later_losses(two, one, 1e-6);
    if (world_rank() == 0) {
        EXPECT_LE(relative_error(final_parameters(two), final_parameters(one)), 1e-6);
    }
}

}  // namespace
}  // namespace mixgpt
