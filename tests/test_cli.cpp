// The `mixgpt` binary as a user runs it (found beside the test binary): option errors and library
// errors end as one line and a non-zero status; SIGTERM ends a training run with a checkpoint and
// status 0, and resuming it in a new process gives exactly the straight run's weights and losses;
// --dry-run, eval --json, sample and bench --json work end to end.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "model/checkpoint.h"
#include "tests/test_process_support.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;
using namespace test;

class CliTest : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_TRUE(std::filesystem::exists(mixgpt_binary())) << mixgpt_binary(); }

    Outcome run(const std::vector<std::string>& arguments) {
        return wait_for(spawn(arguments, directory_.file("out.txt"), directory_.file("err.txt")),
                        directory_.file("out.txt"), directory_.file("err.txt"));
    }
    std::vector<std::string> tiny_train_arguments(const std::string& output_dir) const {
        return {"train",   "--dataset", tiny_dataset().directory,
                "--model", "d2",        "--n-embd",
                "32",      "-b",        "4",
                "-t",      "16",        "--threads",
                "1",       "--seed",    "5",
                "-o",      output_dir};
    }

    TempDirectory directory_{"mixgpt_cli_test"};
};

TEST_F(CliTest, UnknownOptionFailsWithOneLine) {
    const Outcome outcome = run({"train", "--bogus"});
    EXPECT_NE(outcome.exit_status, 0);
    EXPECT_TRUE(outcome.out.empty());
    const std::vector<std::string> lines = lines_of(outcome.err);
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines[0].find("--bogus"), std::string::npos) << outcome.err;
    EXPECT_EQ(lines[0].rfind("mixgpt: ", 0), 0u) << outcome.err;
}

TEST_F(CliTest, LibraryErrorIsOneLineNamingTheOption) {
    std::vector<std::string> arguments = tiny_train_arguments(directory_.file("run"));
    arguments.insert(arguments.end(), {"--steps", "2", "--total-batch-tokens", "100"});
    const Outcome outcome = run(arguments);
    EXPECT_EQ(outcome.exit_status, 1);
    const std::vector<std::string> lines = lines_of(outcome.err);
    ASSERT_EQ(lines.size(), 1u) << outcome.err;
    EXPECT_EQ(lines[0],
              "mixgpt: error: total-batch-tokens: 100 is not a multiple of B*T*ranks = 4*16*1 = 64; "
              "totals that work: 64, 128");
    EXPECT_FALSE(std::filesystem::exists(directory_.file("run")));
}

TEST_F(CliTest, SigtermCheckpointsAndANewProcessResumesBitExactly) {
    const int steps = 400;
    std::vector<std::string> straight = tiny_train_arguments(directory_.file("straight"));
    straight.insert(straight.end(), {"--steps", std::to_string(steps)});
    ASSERT_EQ(run(straight).exit_status, 0);

    std::vector<std::string> stopped = tiny_train_arguments(directory_.file("stopped"));
    stopped.insert(stopped.end(), {"--steps", std::to_string(steps)});
    const pid_t pid = spawn(stopped, directory_.file("out.txt"), directory_.file("err.txt"));
    const std::string metrics = metrics_path(directory_.file("stopped"));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (lines_of(read_text(metrics)).size() < 20 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    kill(pid, SIGTERM);
    const Outcome interrupted = wait_for(pid, directory_.file("out.txt"), directory_.file("err.txt"));
    EXPECT_EQ(interrupted.exit_status, 0) << interrupted.err;
    EXPECT_NE(interrupted.out.find("(stopped by a signal)"), std::string::npos) << interrupted.out;
    const std::vector<std::string> saved = list_checkpoints(checkpoint_directory(directory_.file("stopped")));
    ASSERT_EQ(saved.size(), 1u);
    const int64_t stopped_at = read_checkpoint(saved[0]).step;
    EXPECT_GE(stopped_at, 20);
    EXPECT_LT(stopped_at, steps);

    stopped.push_back("--resume");
    const Outcome resumed = run(stopped);
    ASSERT_EQ(resumed.exit_status, 0) << resumed.err;
    const Checkpoint expected =
        read_checkpoint(checkpoint_path(checkpoint_directory(directory_.file("straight")), steps));
    const Checkpoint actual =
        read_checkpoint(checkpoint_path(checkpoint_directory(directory_.file("stopped")), steps));
    EXPECT_EQ(actual.parameters, expected.parameters);
    EXPECT_EQ(actual.adam_m, expected.adam_m);
    EXPECT_EQ(actual.adam_v, expected.adam_v);

    const auto losses = [](const std::string& path) {
        std::map<int64_t, double> by_step;
        for (const std::string& line : lines_of(read_text(path))) {
            const nlohmann::json record = nlohmann::json::parse(line);
            if (record["type"] == "train")
                by_step[record["step"].get<int64_t>()] = record["loss"].get<double>();
        }
        return by_step;
    };
    EXPECT_EQ(losses(metrics), losses(metrics_path(directory_.file("straight"))));
}

TEST_F(CliTest, DryRunEvalSampleAndBench) {
    std::vector<std::string> dry = tiny_train_arguments(directory_.file("dry"));
    dry.push_back("--dry-run");
    const Outcome plans = run(dry);
    ASSERT_EQ(plans.exit_status, 0) << plans.err;
    for (const char* policy : {"recompute none:", "recompute selective:", "recompute full:"})
        EXPECT_NE(plans.out.find(policy), std::string::npos) << plans.out;
    EXPECT_FALSE(std::filesystem::exists(directory_.file("dry")));

    std::vector<std::string> train = tiny_train_arguments(directory_.file("run"));
    train.insert(train.end(), {"--steps", "30"});
    ASSERT_EQ(run(train).exit_status, 0);

    const Outcome eval = run({"eval", directory_.file("run"), "--json", "--threads", "1"});
    ASSERT_EQ(eval.exit_status, 0) << eval.err;
    const nlohmann::json report = nlohmann::json::parse(eval.out);
    double last_val_loss = 0;
    for (const std::string& line : lines_of(read_text(metrics_path(directory_.file("run"))))) {
        const nlohmann::json record = nlohmann::json::parse(line);
        if (record["type"] == "eval") last_val_loss = record["val_loss"].get<double>();
    }
    EXPECT_EQ(report["mean_loss"].get<double>(), last_val_loss);
    EXPECT_EQ(report["step"], 30);
    EXPECT_GT(report["bits_per_byte"].get<double>(), 0);

    const Outcome sample = run({"sample", directory_.file("run"), "--prompt", "the cat", "-n", "12", "--seed",
                                "3", "--num-samples", "2", "--threads", "1"});
    ASSERT_EQ(sample.exit_status, 0) << sample.err;
    EXPECT_NE(sample.out.find("--- sample 2 ---\nthe cat"), std::string::npos) << sample.out;
    // More tokens than the context of 16 holds: generated up to it, and said why it stopped.
    const Outcome long_sample = run({"sample", directory_.file("run"), "--prompt", "the cat", "-n", "100",
                                     "--no-stop", "--threads", "1"});
    ASSERT_EQ(long_sample.exit_status, 0) << long_sample.err;
    EXPECT_NE(long_sample.err.find("max-new-tokens 100: the prompt's"), std::string::npos) << long_sample.err;
    EXPECT_NE(long_sample.err.find("in the model's context of 16; generation stops there"), std::string::npos)
        << long_sample.err;

    const Outcome bench =
        run({"bench", "--model", "d2", "--n-embd", "32", "--vocab-size", "100", "-b", "2", "-t", "16",
             "--warmup-steps", "1", "--steps", "2", "--threads", "1", "--json"});
    ASSERT_EQ(bench.exit_status, 0) << bench.err;
    const nlohmann::json results = nlohmann::json::parse(bench.out)["results"];
    ASSERT_EQ(results.size(), 4u);
    EXPECT_EQ(results[0]["precision"], "fp32");
    EXPECT_GT(results[3]["tokens_per_second"].get<double>(), 0);
    EXPECT_TRUE(results[3]["mfu"].is_null());  // no peak known for a CPU
}

}  // namespace
}  // namespace mixgpt
