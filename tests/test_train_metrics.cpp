// The metrics file: one JSON object per line with the documented fields, non-finite numbers as
// null, appending on resume, and a clear error for an unwritable path.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/test_support.h"
#include "train/metrics.h"

namespace mixgpt {
namespace {

std::vector<nlohmann::json> read_lines(const std::string& path) {
    std::vector<nlohmann::json> lines;
    std::ifstream file(path);
    for (std::string line; std::getline(file, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
}

TEST(TrainMetricsTest, WritesOneObjectPerLine) {
    test::TempDirectory directory("mixgpt_metrics_test");
    const std::string path = directory.file("metrics.jsonl");
    {
        MetricsWriter writer(path, false);
        TrainMetrics train;
        train.step = 1;
        train.loss = std::nan("");
        train.learning_rate = 6e-4;
        train.loss_scale = 65536;
        train.skipped = true;
        train.skipped_total = 1;
        train.tokens = 2048;
        train.memory_bytes = 12345;
        writer.write(train);
        EvalMetrics eval;
        eval.step = 1;
        eval.val_loss = 3.5;
        eval.val_perplexity = std::exp(3.5);
        eval.val_tokens = 640;
        writer.write(eval);
    }
    {
        MetricsWriter writer(path, true);
        writer.write_resume(1);
    }
    const std::vector<nlohmann::json> lines = read_lines(path);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0]["type"], "train");
    EXPECT_TRUE(lines[0]["loss"].is_null());
    EXPECT_EQ(lines[0]["lr"].get<double>(), 6e-4);
    EXPECT_EQ(lines[0]["loss_scale"].get<double>(), 65536);
    EXPECT_EQ(lines[0]["skipped"], true);
    EXPECT_EQ(lines[0]["tokens"], 2048);
    EXPECT_EQ(lines[0]["memory_bytes"], 12345);
    for (const char* field : {"grad_norm", "skipped_total", "tokens_per_second", "ms_per_step"})
        EXPECT_TRUE(lines[0].contains(field)) << field;
    EXPECT_EQ(lines[1]["type"], "eval");
    EXPECT_EQ(lines[1]["val_loss"].get<double>(), 3.5);
    EXPECT_EQ(lines[1]["val_tokens"], 640);
    EXPECT_EQ(lines[2], (nlohmann::json{{"type", "resume"}, {"step", 1}}));

    try {
        MetricsWriter writer(directory.file("missing/dir/metrics.jsonl"), false);
        FAIL() << "opened a file in a missing directory";
    } catch (const Error& error) {
        EXPECT_NE(std::string(error.what()).find("missing/dir/metrics.jsonl: cannot open"),
                  std::string::npos);
    }
}

// A run killed after its checkpoint at step 2 wrote steps 3 and 4 and half a line; resuming at 2
// keeps steps <= 2 only, so that the resumed run's lines follow without a repeated step.
TEST(TrainMetricsTest, ResumeRewritesTheFileWithoutTheLinesPastTheStep) {
    test::TempDirectory directory;
    const std::string kept =
        "{\"type\":\"train\",\"step\":1,\"loss\":5.0}\n{\"type\":\"train\",\"step\":2,\"loss\":4.0}\n"
        "{\"type\":\"eval\",\"step\":2,\"val_loss\":4.5}\n";
    const std::string path = directory.write(
        "metrics.jsonl", kept +
                             "{\"type\":\"train\",\"step\":3,\"loss\":3.0}\n{\"type\":\"eval\",\"step\":4}\n"
                             "{\"type\":\"train\",\"st");
    EXPECT_EQ(truncate_metrics_after(path, 2), 3);
    std::ifstream file(path);
    const std::string content((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    EXPECT_EQ(content, kept);
    EXPECT_EQ(truncate_metrics_after(path, 2), 0);  // nothing past step 2 any more
    EXPECT_EQ(truncate_metrics_after(directory.file("absent.jsonl"), 2), 0);
    EXPECT_FALSE(std::filesystem::exists(directory.file("absent.jsonl")));
}

}  // namespace
}  // namespace mixgpt
