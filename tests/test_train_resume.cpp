// Resume is bit-exact (tests/train_equivalence.h: 8 steps straight equal 4 steps stopped by SIGTERM
// and 4 more resumed) for fp32 with gradient accumulation, bf16 with stochastic rounding and fp16
// with dynamic loss scaling; the GPU runs the same in tests/gpu/test_gpu_training.cpp.
// Bad checkpoints are refused with a message, and divergence stops a run cleanly.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "model/checkpoint.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "tests/train_equivalence.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;
using test::error_of;
using test::TempDirectory;

class TrainResumeTest : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(TrainResumeTest, StopAndResumeEqualsAStraightRun) {
    const ResumeCase& c = GetParam();
    expect_resume_equals_straight_run(resume_case_options(c, "cpu"), std::string("mixgpt_resume_") + c.name);
}

INSTANTIATE_TEST_SUITE_P(Precisions, TrainResumeTest, ::testing::ValuesIn(resume_cases()), resume_case_name);

// The same in the Llama-style family (tests/test_train_support.h), the fp32 case with full
// recomputation as well.
class TrainLlamaResumeTest : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(TrainLlamaResumeTest, StopAndResumeEqualsAStraightRun) {
    const ResumeCase& c = GetParam();
    TrainOptions options = resume_case_options(c, "cpu");
    const TrainOptions llama = tiny_llama_train_options("");
    options.model = llama.model;
    if (c.accumulation_steps > 1) options.recompute = Recompute::full;
    expect_resume_equals_straight_run(options, std::string("mixgpt_llama_resume_") + c.name);
}

INSTANTIATE_TEST_SUITE_P(Precisions, TrainLlamaResumeTest, ::testing::ValuesIn(resume_cases()), resume_case_name);

TEST(TrainCheckpointTest, BadCheckpointsAreRefusedAndAutoResumeFallsBack) {
    TempDirectory directory("mixgpt_resume_bad");
    TrainOptions options = tiny_train_options(directory.file("run"));
    options.steps = 4;
    options.checkpoint_interval = 2;
    const TrainResult done = run_training(options);
    const std::string newest = checkpoint_path(checkpoint_directory(options.output_dir), 4);
    ASSERT_EQ(done.last_checkpoint, newest);

    // A given file that is truncated: a one-line refusal naming it.
    std::filesystem::copy_file(newest, directory.file("cut.h5"));
    std::filesystem::resize_file(directory.file("cut.h5"), std::filesystem::file_size(newest) / 2);
    options.resume = directory.file("cut.h5");
    const std::string message = error_of([&] { run_training(options); });
    EXPECT_NE(message.find(directory.file("cut.h5") + ": truncated checkpoint"), std::string::npos)
        << message;

    // Auto: the newest is damaged, so training continues from the older one.
    std::filesystem::resize_file(newest, 1000);
    options.resume = "auto";
    options.steps = 6;
    const TrainResult resumed = run_training(options);
    EXPECT_EQ(resumed.steps_done, 6);
    std::ifstream metrics(resumed.metrics_path);
    std::string line, last_resume;
    while (std::getline(metrics, line))
        if (line.find("\"resume\"") != std::string::npos) last_resume = line;
    EXPECT_EQ(nlohmann::json::parse(last_resume)["step"], 2);

    // Another model shape: refused, naming the field.
    options.model.n_embd = 64;
    const std::string shape = error_of([&] { run_training(options); });
    EXPECT_NE(shape.find("refusing checkpoint: n_embd is 32 there, 64 in this run"), std::string::npos)
        << shape;
}

TEST(TrainDivergenceTest, NonFiniteStepsStopTheRunAndKeepTheLastCheckpoint) {
    TempDirectory directory("mixgpt_diverge");
    TrainOptions options = tiny_train_options(directory.file("run"));
    options.steps = 20;
    options.warmup_steps = 0;
    options.learning_rate = 1e30;  // the first update sends the weights to ~1e30: the next forward overflows
    options.lr_decay = LrDecay::constant;
    options.checkpoint_interval = 1;
    options.max_bad_steps = 3;
    const std::string message = error_of([&] { run_training(options); });
    EXPECT_NE(message.find("training diverged: 3 consecutive steps with non-finite loss or gradients"),
              std::string::npos)
        << message;
    const std::string last = newest_valid_checkpoint(checkpoint_directory(options.output_dir));
    ASSERT_FALSE(last.empty());
    EXPECT_NE(message.find("the last checkpoint (" + last + ") is intact"), std::string::npos) << message;
    const Checkpoint checkpoint = read_checkpoint(last);
    EXPECT_EQ(checkpoint.status.optimizer_steps, 1);  // only the first update was applied
    EXPECT_EQ(checkpoint.status.skipped_steps, checkpoint.step - 1);
    EXPECT_EQ(checkpoint.bad_steps_in_a_row, checkpoint.step - 1);

    // The count of bad steps in a row survives a resume: one more bad step reaches the limit.
    options.resume = "auto";
    const std::string resumed = error_of([&] { run_training(options); });
    EXPECT_NE(resumed.find(format("3 consecutive steps with non-finite loss or gradients (up to step %lld)",
                                  static_cast<long long>(checkpoint.step + 1))),
              std::string::npos)
        << resumed;
}

}  // namespace
}  // namespace mixgpt
