// The loss-spike guard (`train --skip-spikes`, train/spike_guard.h): its statistics and verdicts
// alone, then training runs on the CPU backend with a planted spike (tests/spike_guard_runs.h:
// held, no weight changed, counted, resumed bit for bit, held steps in a row stop the run), the
// options refused in one line, and the command's stop: exit status 1, one error line, the checkpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "tests/bad_inputs_support.h"
#include "tests/spike_guard_runs.h"
#include "train/spike_guard.h"
#include "train/train_options.h"

namespace mixgpt {
namespace {

using namespace testing_support;
using test::error_of;

// mean + z population standard deviations, the textbook way.
double limit_of(const std::vector<double>& values, double z) {
    double mean = 0, variance = 0;
    for (double value : values) mean += value / static_cast<double>(values.size());
    for (double value : values)
        variance += (value - mean) * (value - mean) / static_cast<double>(values.size());
    return mean + z * std::sqrt(variance);
}

TEST(SpikeWindowTest, JudgesNothingUntilTheWindowIsFull) {
    SpikeWindow window(3, 4);
    for (double loss : {5.0, 4.0, 100.0, 3.0}) {
        const SpikeWindow::Verdict verdict = window.judge(loss, 1.0);
        EXPECT_FALSE(verdict.judged);
        EXPECT_FALSE(verdict.held);
    }
    const SpikeWindow::Verdict fifth = window.judge(3.0, 1.0);
    EXPECT_TRUE(fifth.judged);
    EXPECT_FALSE(fifth.held);
    EXPECT_DOUBLE_EQ(fifth.loss_limit, limit_of({5, 4, 100, 3}, 3));
    EXPECT_EQ(window.state().losses, (std::vector<double>{4, 100, 3, 3})) << "the oldest left";
}

TEST(SpikeWindowTest, HoldsALossOrAGradientNormAboveTheBandAndKeepsItOutOfTheWindow) {
    SpikeWindow window(2, 4);
    const std::vector<double> losses = {4.0, 4.2, 3.9, 4.1}, norms = {1.0, 1.2, 0.8, 1.0};
    for (size_t i = 0; i < losses.size(); ++i) window.judge(losses[i], norms[i]);
    const double loss_limit = limit_of(losses, 2), norm_limit = limit_of(norms, 2);

    SpikeWindow::Verdict verdict = window.judge(loss_limit * (1 + 1e-12), 1.0);
    EXPECT_TRUE(verdict.judged && verdict.held);
    EXPECT_DOUBLE_EQ(verdict.loss_limit, loss_limit);
    EXPECT_DOUBLE_EQ(verdict.grad_norm_limit, norm_limit);
    verdict = window.judge(3.0, norm_limit * (1 + 1e-12));
    EXPECT_TRUE(verdict.held) << "a gradient norm alone";
    EXPECT_EQ(window.skips(), 2);
    EXPECT_EQ(window.skips_in_a_row(), 2);
    EXPECT_EQ(window.state().losses, losses) << "held steps enter no window";

    verdict = window.judge(loss_limit, norm_limit);  // at the limit: not above it
    EXPECT_TRUE(verdict.judged);
    EXPECT_FALSE(verdict.held);
    EXPECT_EQ(window.skips(), 2);
    EXPECT_EQ(window.skips_in_a_row(), 0);
    EXPECT_EQ(window.state().losses, (std::vector<double>{4.2, 3.9, 4.1, loss_limit}));
    EXPECT_FALSE(window.judge(0.0, 0.0).held) << "below the mean is never a spike";
}

TEST(SpikeWindowTest, LeavesNonFiniteStepsToTheDivergenceRule) {
    SpikeWindow window(3, 2);
    window.judge(4, 1);
    window.judge(4, 1);
    window.judge(100, 1);
    ASSERT_EQ(window.skips_in_a_row(), 1);
    for (double value : {std::numeric_limits<double>::infinity(), std::nan("")}) {
        const SpikeWindow::Verdict verdict = window.judge(value, 1);
        EXPECT_FALSE(verdict.judged);
        EXPECT_FALSE(verdict.held);
        EXPECT_FALSE(window.judge(4, value).judged);
    }
    EXPECT_EQ(window.skips(), 1);
    EXPECT_EQ(window.skips_in_a_row(), 1) << "neither extended nor reset";
    EXPECT_EQ(window.state().losses, (std::vector<double>{4, 4}));
}

TEST(SpikeWindowTest, StateRoundTripsAndAShorterWindowKeepsTheNewest) {
    SpikeWindow window(3, 4);
    for (double loss : {5.0, 4.5, 4.0, 3.5, 50.0}) window.judge(loss, loss / 10);
    const SpikeGuardState state = window.state();
    EXPECT_EQ(state.skips, 1);
    EXPECT_EQ(state.skips_in_a_row, 1);

    SpikeWindow same(3, 4);
    same.restore(state);
    EXPECT_EQ(same.state().losses, state.losses);
    EXPECT_EQ(same.state().grad_norms, state.grad_norms);
    EXPECT_EQ(same.judge(60, 6).loss_limit, window.judge(60, 6).loss_limit);

    SpikeWindow shorter(3, 2);
    shorter.restore(state);
    EXPECT_EQ(shorter.state().losses, (std::vector<double>{4.0, 3.5}));
    EXPECT_EQ(shorter.state().grad_norms, (std::vector<double>{0.4, 0.35}));
    EXPECT_EQ(shorter.skips(), 1);
}

TEST(SpikeGuardOptionsTest, BadValuesAreRefusedInOneLine) {
    const auto refusal = [](void (*change)(TrainOptions&)) {
        TrainOptions options = tiny_train_options("unused");
        change(options);
        return error_of([&] { plan_training(options, 300, 1); });
    };
    const std::string finite = "skip-spikes: must be a finite number of standard deviations > 0 (0: off)";
    EXPECT_EQ(refusal([](TrainOptions& o) { o.skip_spikes = -1; }), finite);
    EXPECT_EQ(refusal([](TrainOptions& o) { o.skip_spikes = std::nan(""); }), finite);
    EXPECT_EQ(refusal([](TrainOptions& o) { o.skip_spikes = std::numeric_limits<double>::infinity(); }),
              finite);
    EXPECT_EQ(refusal([](TrainOptions& o) { o.spike_window = 1; }), "spike-window: must be at least 2 steps");
    EXPECT_EQ(refusal([](TrainOptions& o) { o.max_spike_skips = 0; }), "max-spike-skips: must be at least 1");
    EXPECT_EQ(refusal([](TrainOptions& o) { o.skip_spikes = 2.5; }), "");
}

TEST(TrainSpikeGuardTest, APlantedSpikeIsHeldAndChangesNoWeight) {
    expect_planted_spike_held("cpu", "mixgpt_spike_held");
}

TEST(TrainSpikeGuardTest, ResumeEqualsAStraightRunWithTheStatisticsRestored) {
    expect_guarded_resume_equals_straight_run(spike_guard_options("cpu", ""), "mixgpt_spike_resume");
}

TEST(TrainSpikeGuardTest, Fp16ResumeEqualsAStraightRun) {  // dynamic loss scaling beside the guard
    TrainOptions options = spike_guard_options("cpu", "");
    options.precision = Precision::fp16;
    expect_guarded_resume_equals_straight_run(options, "mixgpt_spike_resume_fp16");
}

TEST(TrainSpikeGuardTest, HeldStepsInARowStopTheRunWithACheckpoint) {
    expect_held_steps_in_a_row_stop_the_run("cpu", "mixgpt_spike_stop");
}

// The command line: the flags refused in one line before anything is written, and a run whose
// guard reaches its limit (a tiny Z and window: the first gradient norm above its predecessor's
// is held) exits 1 with one error line, its checkpoint the last applied update's.
class SpikeGuardCommandTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        fixture_ = test::make_bad_input_fixture("mixgpt_spike_command").release();
    }
    static void TearDownTestSuite() {
        delete fixture_;
        fixture_ = nullptr;
    }
    static inline test::TempDirectory* fixture_ = nullptr;
    test::BadInputRunner runner_{*fixture_};
};

TEST_F(SpikeGuardCommandTest, BadFlagsAreRefusedInOneLine) {
    const std::vector<test::BadInput> cases = {
        {"--skip-spikes 0",
         test::train_with({"--skip-spikes", "0"}, "{D}/run_z0"),
         2,
         {"--skip-spikes: must be > 0 (got 0)"}},
        {"--skip-spikes -2",
         test::train_with({"--skip-spikes", "-2"}, "{D}/run_z"),
         2,
         {"--skip-spikes: must be > 0 (got -2)"}},
        {"--skip-spikes inf",
         test::train_with({"--skip-spikes", "inf"}, "{D}/run_z"),
         1,
         {"skip-spikes: must be a finite number of standard deviations > 0 (0: off)"}},
        {"--spike-window 1",
         test::train_with({"--skip-spikes", "3", "--spike-window", "1"}, "{D}/run_w"),
         2,
         {"--spike-window: must be >= 2 (got 1)"}},
        {"--max-spike-skips 0",
         test::train_with({"--skip-spikes", "3", "--max-spike-skips", "0"}, "{D}/run_m"),
         2,
         {"--max-spike-skips: must be >= 1 (got 0)"}},
        {"--spike-window without --skip-spikes",
         test::train_with({"--spike-window", "8"}, "{D}/run_n"),
         2,
         {"--spike-window requires --skip-spikes"}},
        {"--peak-tflops 0",
         test::train_with({"--peak-tflops", "0"}, "{D}/run_p"),
         2,
         {"--peak-tflops: must be > 0 (got 0)"}},
    };
    for (const test::BadInput& bad : cases) runner_.check(bad);
}

TEST_F(SpikeGuardCommandTest, ReachingTheLimitExitsWithOneLineAndACheckpoint) {
    test::TempDirectory scratch("mixgpt_spike_command_run");
    const std::string run = scratch.file("stopped");
    const test::Outcome outcome = runner_.run(test::train_with(
        {"--steps", "40", "--skip-spikes", "1e-9", "--spike-window", "2", "--max-spike-skips", "1",
         "--checkpoint-interval", "1", "--keep-checkpoints", "100"},
        run));
    EXPECT_EQ(outcome.exit_status, 1) << outcome.err;
    std::string line;
    ASSERT_TRUE(test::is_one_error_line(outcome.err, line));
    const std::map<int64_t, nlohmann::json> lines = train_lines(run + "/metrics.jsonl");
    ASSERT_FALSE(lines.empty());
    const int64_t last = lines.rbegin()->first;
    EXPECT_LT(last, 40);
    EXPECT_TRUE(lines.rbegin()->second["spike_skipped"].get<bool>());
    const std::string written = checkpoint_path(run + "/checkpoints", last);
    EXPECT_NE(
        line.find(format("mixgpt: error: training stopped at step %lld: --max-spike-skips 1 reached (the "
                         "loss-spike guard held 1 steps in a row); %s holds the last applied update",
                         static_cast<long long>(last), written.c_str())),
        std::string::npos)
        << line;
    EXPECT_NE(outcome.err.find(format("step %lld: loss spike, update held", static_cast<long long>(last))),
              std::string::npos)
        << outcome.err;
    const Checkpoint stopped = read_checkpoint(written);
    expect_same_weights_and_optimizer(stopped,
                                      read_checkpoint(checkpoint_path(run + "/checkpoints", last - 1)));
    EXPECT_EQ(stopped.spike_guard->skips_in_a_row, 1);
}

}  // namespace
}  // namespace mixgpt
