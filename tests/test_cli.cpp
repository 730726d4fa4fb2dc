// The `mixgpt` binary as a user runs it (found beside the test binary): option errors and library
// errors end as one line and a non-zero status; SIGTERM ends a training run with a checkpoint and
// status 0, and resuming it in a new process gives exactly the straight run's weights and losses;
// --dry-run, eval --json, sample, bench --json, export and import work end to end, and training
// says which device --device auto chose and why; info describes the build and the devices.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/build_info.h"
#include "kernels/device_discovery.h"
#include "kernels/ops.h"
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
    const Outcome trained = run(train);
    ASSERT_EQ(trained.exit_status, 0) << trained.err;
    const CudaDiscovery cuda = discover_cuda();  // --device auto, the default, says what it chose
    EXPECT_NE(trained.err.find(cuda.devices.empty()
                                   ? "device: cpu (auto: no usable CUDA device: " + cuda.failure + ")"
                                   : std::string("device: cuda (auto: cuda:0 is ")),
              std::string::npos)
        << trained.err;

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

TEST_F(CliTest, InfoSaysWhatThisBuildIsAndWhatItSees) {
    const Outcome info = run({"info"});
    ASSERT_EQ(info.exit_status, 0) << info.err;
    const std::vector<std::string> lines = lines_of(info.out);
    ASSERT_GE(lines.size(), 3u) << info.out;
    EXPECT_EQ(lines[0].rfind("mixgpt ", 0), 0u) << info.out;
    EXPECT_NE(lines[0].find(" (commit "), std::string::npos) << info.out;
    EXPECT_EQ(lines[1].rfind(built_with_cuda() ? "build: CUDA (GPU_ARCHS " : "build: CPU only", 0), 0u)
        << info.out;
    if (built_with_cuda()) {  // the toolkit and the driver it needs (minimum: core/build_info.h)
        const std::string toolkit = "CUDA toolkit: built with " + cuda_version_text(build_cuda_version()) +
                                    " (runtime linked statically), needs an NVIDIA driver >= " +
                                    minimum_linux_driver(build_cuda_version()) + " on Linux";
        EXPECT_NE(std::find(lines.begin(), lines.end(), toolkit), lines.end()) << info.out;
    }
    const CudaDiscovery cuda = discover_cuda();
    if (cuda.devices.empty())
        EXPECT_EQ(lines.back(), "devices: none: " + cuda.failure);
    else
        EXPECT_EQ(lines.back().rfind("cuda:" + std::to_string(cuda.devices.size() - 1) + ": ", 0), 0u)
            << info.out;
}

// The OpenMP wait (cli/openmp_waits.h): mixgpt's spin count of 3000 when the environment chose
// none (set before libgomp starts, by executing itself again), the user's choice otherwise.
TEST_F(CliTest, InfoSaysHowOpenmpThreadsWait) {
    const auto waits_line = [this] {
        const Outcome info = run({"info"});
        for (const std::string& line : lines_of(info.out))
            if (line.rfind("OpenMP waits: ", 0) == 0) return line;
        return "(no OpenMP line in) " + info.out;
    };
    const test::ScopedEnvironment unset({{"GOMP_SPINCOUNT", nullptr}, {"OMP_WAIT_POLICY", nullptr}});
    EXPECT_EQ(waits_line(), "OpenMP waits: GOMP_SPINCOUNT=3000 (mixgpt's default)");
    {
        const test::ScopedEnvironment chosen({{"GOMP_SPINCOUNT", "77"}, {"OMP_WAIT_POLICY", nullptr}});
        EXPECT_EQ(waits_line(), "OpenMP waits: GOMP_SPINCOUNT=77 (from the environment)");
    }
    const test::ScopedEnvironment passive({{"OMP_WAIT_POLICY", "passive"}, {"GOMP_SPINCOUNT", nullptr}});
    EXPECT_EQ(waits_line(), "OpenMP waits: OMP_WAIT_POLICY=passive (from the environment)");
}

TEST_F(CliTest, UnknownDeviceIsRefusedByName) {
    const Outcome outcome = run({"eval", "run", "--device", "gpu"});
    EXPECT_EQ(outcome.exit_status, 2);
    EXPECT_NE(outcome.err.find("--device: gpu not in {auto,cpu,cuda}"), std::string::npos) << outcome.err;
}

TEST_F(CliTest, ExportImportAndTheirOneLineErrors) {
    std::vector<std::string> train = tiny_train_arguments(directory_.file("run"));
    train.insert(train.end(), {"--steps", "4"});
    ASSERT_EQ(run(train).exit_status, 0);

    const Outcome exported = run({"export", directory_.file("run"), "-o", directory_.file("hf")});
    ASSERT_EQ(exported.exit_status, 0) << exported.err;
    EXPECT_NE(exported.out.find("(step 4) to " + directory_.file("hf") + ": 28 tensors"), std::string::npos)
        << exported.out;
    const Outcome imported = run({"import", directory_.file("hf"), "-o", directory_.file("imported")});
    ASSERT_EQ(imported.exit_status, 0) << imported.err;
    const Outcome before = run({"eval", directory_.file("run"), "--json", "--threads", "1"});
    const Outcome after = run({"eval", directory_.file("imported"), "--json", "--threads", "1"});
    ASSERT_EQ(after.exit_status, 0) << after.err;
    EXPECT_EQ(nlohmann::json::parse(after.out)["total_nats"],
              nlohmann::json::parse(before.out)["total_nats"]);

    const Outcome occupied = run({"export", directory_.file("run"), "-o", directory_.file("hf")});
    EXPECT_EQ(occupied.exit_status, 1);
    EXPECT_EQ(occupied.err, "mixgpt: error: " + directory_.file("hf") +
                                ": exists and is not empty (--force replaces it)\n");
    std::filesystem::remove(directory_.file("hf") + "/tokenizer.model");
    std::ofstream(directory_.file("hf") + "/vocab.json") << "{}";
    const Outcome bpe = run({"import", directory_.file("hf"), "-o", directory_.file("bpe")});
    EXPECT_EQ(bpe.exit_status, 1);
    ASSERT_EQ(lines_of(bpe.err).size(), 1u) << bpe.err;
    EXPECT_NE(bpe.err.find("vocab.json: GPT-2's vocab.json and merges.txt must lie side by side"),
              std::string::npos)
        << bpe.err;
    EXPECT_FALSE(std::filesystem::exists(directory_.file("bpe")));
}

}  // namespace
}  // namespace mixgpt
