// The loss-spike guard (train/spike_guard.h) on 2 ranks with ZeRO-1 (CPU backend): each rank trains
// on its share of the planted batch (tests/spike_guard_runs.h), and both hold the step, since the
// verdict is taken from the global loss and gradient norm, the same doubles on every rank; with
// three planted in a row both stop after step 12, behind rank 0's checkpoint of the last update;
// and a run stopped before the spike resumes bit for bit, every rank with rank 0's statistics
// (a rank without them would apply the spike while the other holds it: a collective mismatch).
#include <gtest/gtest.h>

#include <csignal>

#include "tests/mpi/mpi_test_support.h"
#include "tests/spike_guard_runs.h"

namespace mixgpt {
namespace {

using namespace testing_support;

TrainOptions two_rank_options(const std::string& output_dir) {
    TrainOptions options = spike_guard_options("cpu", output_dir);
    options.dataset = shared_tiny_dataset_path();
    options.batch_size = 2;  // 2 ranks x 2: the single process's batch of 4
    options.zero_optimizer = true;
    options.bucket_mb = 1.0 / 256;  // 4 KiB
    options.collective_timeout = kTestCollectiveTimeout;
    return options;
}

TEST(DataParallelSpikeGuardTest, BothRanksHoldTheSpikeAndStopTogether) {
    SharedTempDirectory directory("mixgpt_mpi_spike_guard");
    TrainOptions options = two_rank_options(directory.file("held"));
    const TrainResult held = run_training(options, nullptr, planted_spikes(options, {kPlantedStep}));
    EXPECT_EQ(held.steps_done, options.steps);
    if (world_rank() == 0) {
        for (const auto& [step, line] : train_lines(held.metrics_path))
            EXPECT_EQ(line["spike_skipped"].get<bool>(), step == kPlantedStep) << line.dump();
        expect_same_weights_and_optimizer(checkpoint_at(options, kPlantedStep),
                                          checkpoint_at(options, kPlantedStep - 1));
    }

    options.output_dir = directory.file("stopped");
    const std::string message = test::error_of([&] {
        run_training(options, nullptr, planted_spikes(options, {10, 11, 12}));
    });
    EXPECT_NE(message.find("training stopped at step 12: --max-spike-skips 3 reached"), std::string::npos)
        << "rank " << world_rank() << ": " << message;
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0)
        expect_same_weights_and_optimizer(checkpoint_at(options, 12), checkpoint_at(options, 9));
}

TEST(DataParallelSpikeGuardTest, ResumeAcrossTheSpikeIsBitIdentical) {
    SharedTempDirectory directory("mixgpt_mpi_spike_resume");
    TrainOptions options = two_rank_options(directory.file("straight"));
    const BatchEditor plant = planted_spikes(options, {kPlantedStep});
    const TrainResult straight = run_training(options, nullptr, plant);
    options.output_dir = directory.file("stopped");
    const TrainResult first = run_training(
        options,
        [](const TrainMetrics& metrics) {
            if (metrics.step == 7) std::raise(SIGTERM);
        },
        plant);
    EXPECT_EQ(first.steps_done, 7);
    options.resume = "auto";
    const TrainResult resumed = run_training(options, nullptr, plant);
    EXPECT_EQ(resumed.steps_done, options.steps);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() != 0) return;
    const Checkpoint expected = read_checkpoint(straight.last_checkpoint);
    ASSERT_TRUE(expected.spike_guard.has_value());
    EXPECT_EQ(expected.spike_guard->skips, 1);
    test::expect_same_training_state(read_checkpoint(resumed.last_checkpoint), expected);
}

}  // namespace
}  // namespace mixgpt
