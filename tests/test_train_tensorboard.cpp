// `train --tensorboard`: the event files read by an independent reader
// (scripts/tensorboard_events/check_event_files.py: its own CRC-32C, TensorBoard's field numbers
// compiled by Debian's protoc) hold metrics.jsonl's values at their steps under the documented
// tags, through a resume that redoes steps; evaluations flush the file; and the reader fails on
// a damaged record or a value that differs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/flops.h"
#include "tests/test_python_support.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;
using namespace testing_support;
using test::TempDirectory;

constexpr const char* kReader = "scripts/tensorboard_events/check_event_files.py";

struct ReaderResult {
    int status;
    std::string output;
};

ReaderResult read_events(const TempDirectory& scratch, const std::string& events, const std::string& metrics,
                         bool loss_scaled) {
    std::vector<std::string> arguments = {kReader, events, metrics};
    if (loss_scaled) arguments.push_back("--loss-scaled");
    const std::string output_path = scratch.file("reader.txt");
    const int status = test::run_python(arguments, output_path);
    std::ifstream output(output_path);
    return {status, std::string(std::istreambuf_iterator<char>(output), {})};
}

std::vector<std::string> event_files(const std::string& directory) {
    std::vector<std::string> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(directory))
        files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

// An fp16 run (dynamic loss scaling) of 8 steps, evaluated, task-evaluated and checkpointed every
// 4, then resumed from its step-4 checkpoint to step 10: steps 5 to 8 are redone, and the second
// event file's START drops the first file's. At step 5 of the first run, a copy of the event
// folder and of metrics.jsonl up to step 4 is taken: what the evaluation at step 4 flushed.
class TensorBoardRunTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        scratch_ = new TempDirectory("mixgpt_tensorboard");
        const TempDirectory& d = *scratch_;
        d.write(
            "task.jsonl",
            "{\"context\": \"the cat\", \"choices\": [\"sees the moon\", \"likes\"], \"label\": 0}\n"
            "{\"context\": \"a dog finds\", \"choices\": [\"the river\", \"sees\", \"an\"], \"label\": 0}\n");
        TrainOptions options = tiny_train_options(d.file("run"));
        options.precision = Precision::fp16;
        options.eval_interval = 4;
        options.eval_batches = 2;
        options.checkpoint_interval = 4;
        options.task_evals = {"mc:" + d.file("task.jsonl")};
        options.task_eval_interval = 4;
        options.tensorboard_dir = d.file("tb/run");
        options.peak_tflops = 1e-3;  // a peak, so that MFU is known on the CPU
        options.skip_spikes = 3;     // never judged in 10 steps (a window of 100): spike_skips 0
        options.telemetry_interval = 3;  // steps 3 and 6 before the resume, 6 and 9 after
        run_training(options, [&](const TrainMetrics& metrics) {
            if (metrics.step != 5) return;
            fs::create_directories(d.file("flushed"));
            fs::copy(d.file("tb/run"), d.file("flushed/tb"), fs::copy_options::recursive);
            std::ifstream metrics_file(d.file("run/metrics.jsonl"));
            std::ofstream flushed(d.file("flushed/metrics.jsonl"));
            for (std::string line; std::getline(metrics_file, line);)
                if (nlohmann::json::parse(line)["step"].get<int64_t>() <= 4) flushed << line << '\n';
        });
        options.resume = checkpoint_path(checkpoint_directory(options.output_dir), 4);
        options.steps = 10;
        run_training(options);
    }
    static void TearDownTestSuite() {
        delete scratch_;
        scratch_ = nullptr;
    }

    static inline TempDirectory* scratch_ = nullptr;
};

TEST_F(TensorBoardRunTest, EventFilesHoldTheMetricsThroughAResume) {
    const TempDirectory& d = *scratch_;
    ASSERT_EQ(event_files(d.file("tb/run")).size(), 2u) << "one per start";
    const ReaderResult read = read_events(d, d.file("tb/run"), d.file("run/metrics.jsonl"), true);
    ASSERT_EQ(read.status, 0) << read.output;
    for (const char* tag : {"train/loss,", "train/lr,", "train/grad_norm,", "train/tokens_per_second,",
                            "train/loss_scale,", "train/mfu,", "train/spike_skips,", "val/loss,",
                            "val/perplexity,", "task/task.jsonl/acc,", "task/task.jsonl/acc_norm,",
                            "telemetry/logit_amax,", "telemetry/loss_scale_headroom_bits,",
                            "telemetry/output_rms/1,", "telemetry/update_ratio/0,", "telemetry/grad_small_fraction/1,",
                            "telemetry/grad_log2/0,", "telemetry/grad_log2/model,", "telemetry/output_log2/1,"})
        EXPECT_NE(read.output.find(tag), std::string::npos) << tag << " in " << read.output;
    // Without loss scaling announced, train/loss_scale is one tag too many.
    const ReaderResult unscaled = read_events(d, d.file("tb/run"), d.file("run/metrics.jsonl"), false);
    EXPECT_EQ(unscaled.status, 1);
    EXPECT_NE(unscaled.output.find("train/loss_scale at step 1, which"), std::string::npos)
        << unscaled.output;
}

TEST_F(TensorBoardRunTest, EvaluationsFlushTheEventFile) {
    const TempDirectory& d = *scratch_;
    const ReaderResult read = read_events(d, d.file("flushed/tb"), d.file("flushed/metrics.jsonl"), true);
    EXPECT_EQ(read.status, 0) << read.output;
}

TEST_F(TensorBoardRunTest, TheReaderFindsADamagedRecordAndADifferentValue) {
    const TempDirectory& d = *scratch_;
    fs::copy(d.file("tb/run"), d.file("damaged"), fs::copy_options::recursive);
    const std::string last = event_files(d.file("damaged")).back();
    {
        std::fstream file(last, std::ios::in | std::ios::out | std::ios::binary);
        file.seekp(-6, std::ios::end);  // inside the last record's data
        file.put('\x7f');
    }
    const ReaderResult damaged = read_events(d, d.file("damaged"), d.file("run/metrics.jsonl"), true);
    EXPECT_EQ(damaged.status, 1);
    EXPECT_NE(damaged.output.find("the data's CRC is wrong"), std::string::npos) << damaged.output;

    std::ifstream metrics_file(d.file("run/metrics.jsonl"));
    std::ofstream changed(d.file("changed.jsonl"));
    for (std::string line; std::getline(metrics_file, line);) {
        nlohmann::json record = nlohmann::json::parse(line);
        if (record["type"] == "eval" && record["step"] == 10) record["val_loss"] = 1.5;
        changed << record.dump() << '\n';
    }
    changed.close();
    const ReaderResult differs = read_events(d, d.file("tb/run"), d.file("changed.jsonl"), true);
    EXPECT_EQ(differs.status, 1);
    EXPECT_NE(differs.output.find("val/loss at step 10 is"), std::string::npos) << differs.output;
}

// metrics.jsonl's mfu (which the reader found in the event files) is the model's FLOPs per token
// (model/flops.h) times the step's tokens per second over the given peak.
TEST_F(TensorBoardRunTest, MfuIsTheModelFlopsOverThePeak) {
    const TempDirectory& d = *scratch_;
    const GPTConfig config = plan_training(tiny_train_options("unused"), 300, 1).model;
    std::ifstream metrics_file(d.file("run/metrics.jsonl"));
    int train_lines = 0;
    for (std::string line; std::getline(metrics_file, line);) {
        const nlohmann::json record = nlohmann::json::parse(line);
        if (record["type"] != "train") continue;
        ++train_lines;
        const double expected =
            training_flops_per_token(config, 16) * record["tokens_per_second"].get<double>() / 1e9;
        EXPECT_NEAR(record["mfu"].get<double>(), expected, 1e-12 * expected) << line;
    }
    EXPECT_EQ(train_lines, 10);  // steps 1 to 4 of the first run, 5 to 10 of the resumed one
}

// An fp32 run has no loss scale to show; its folder is made with its parents.
TEST(TensorBoardTest, UnscaledRunWritesNoLossScale) {
    TempDirectory d("mixgpt_tensorboard_fp32");
    TrainOptions options = tiny_train_options(d.file("run"));
    options.steps = 2;
    options.tensorboard_dir = d.file("a/b/c");
    run_training(options);
    ASSERT_EQ(event_files(d.file("a/b/c")).size(), 1u);
    const ReaderResult read = read_events(d, d.file("a/b/c"), d.file("run/metrics.jsonl"), false);
    EXPECT_EQ(read.status, 0) << read.output;
    EXPECT_EQ(read.output.find("loss_scale"), std::string::npos) << read.output;
    EXPECT_EQ(read.output.find("train/mfu"), std::string::npos) << "no peak known for a CPU: " << read.output;
    EXPECT_EQ(read.output.find("spike_skips"), std::string::npos) << read.output;
}

// An fp8 run's telemetry: the per-layer FP8 headroom and saturation scalars beside the histograms,
// which the reader recomputes from metrics.jsonl's fp8 and grad_exponents; a histogram changed in
// metrics.jsonl is found.
TEST(TensorBoardTest, Fp8TelemetryScalarsAndHistograms) {
    TempDirectory d("mixgpt_tensorboard_fp8");
    TrainOptions options = tiny_train_options(d.file("run"));
    options.precision = Precision::fp8;
    options.steps = 2;
    options.telemetry_interval = 1;
    options.tensorboard_dir = d.file("tb");
    run_training(options);
    const ReaderResult read = read_events(d, d.file("tb"), d.file("run/metrics.jsonl"), false);
    ASSERT_EQ(read.status, 0) << read.output;
    for (const char* tag : {"telemetry/fp8_input_headroom_bits/0,", "telemetry/fp8_weight_saturated/1,",
                            "telemetry/fp8_gradient_headroom_bits/1,", "telemetry/grad_log2/1,"})
        EXPECT_NE(read.output.find(tag), std::string::npos) << tag << " in " << read.output;

    std::ifstream metrics_file(d.file("run/metrics.jsonl"));
    std::ofstream changed(d.file("changed.jsonl"));
    for (std::string line; std::getline(metrics_file, line);) {
        nlohmann::json record = nlohmann::json::parse(line);
        if (record["type"] == "telemetry" && record["step"] == 2) {
            nlohmann::json& count = record["grad_exponents"][0]["bins"][0][1];
            count = count.get<int64_t>() + 1000;
        }
        changed << record.dump() << '\n';
    }
    changed.close();
    const ReaderResult differs = read_events(d, d.file("tb"), d.file("changed.jsonl"), false);
    EXPECT_EQ(differs.status, 1);
    EXPECT_NE(differs.output.find("telemetry/grad_log2/0 at step 2 is"), std::string::npos) << differs.output;
}

}  // namespace
}  // namespace mixgpt
