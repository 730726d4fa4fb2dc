// --precision fp8 through the trainer on the CPU (the FP8 products emulated exactly): a tiny run
// of each family tracks the fp32 run's losses within a bound taken from FP8's own rounding error,
// reports its saturation counts, and never produces inf or NaN; evaluating during the run does not
// change its training.
//
// The bound: the training loss of a run whose matrix-product inputs are rounded with unit roundoff
// u differs from fp32's, to first order, in proportion to u. bf16 rounds with u = 2^-8 (8
// significant bits), E4M3 with 2^-4 and E5M2 with 2^-3, so an fp8 (hybrid) run's deviation is at
// most 2^-3 / 2^-8 = 32 times the bf16 run's, measured on the same data order. The deviations are
// averaged over the run's steps, so that one step where bf16 lands near fp32 by chance does not
// set the scale.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

std::map<int64_t, double> run_losses(TrainOptions options, Precision precision,
                                     const std::string& directory) {
    options.precision = precision;
    options.output_dir = directory;
    return testing_support::train_losses(run_training(options).metrics_path);
}

double mean_deviation(const std::map<int64_t, double>& run, const std::map<int64_t, double>& reference) {
    double total = 0;
    for (const auto& [step, loss] : reference) total += std::fabs(run.at(step) - loss);
    return total / static_cast<double>(reference.size());
}

void expect_fp8_tracks_fp32(const TrainOptions& options) {
    test::TempDirectory directory("mixgpt_train_fp8");
    const auto fp32 = run_losses(options, Precision::fp32, directory.file("fp32"));
    const auto bf16 = run_losses(options, Precision::bf16, directory.file("bf16"));
    const auto fp8 = run_losses(options, Precision::fp8, directory.file("fp8"));
    ASSERT_EQ(fp8.size(), fp32.size());
    for (const auto& [step, loss] : fp8) ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
    const double bf16_deviation = mean_deviation(bf16, fp32), fp8_deviation = mean_deviation(fp8, fp32);
    ::testing::Test::RecordProperty("fp8_mean_deviation", std::to_string(fp8_deviation));
    ::testing::Test::RecordProperty("bf16_mean_deviation", std::to_string(bf16_deviation));
    EXPECT_GT(mean_deviation(fp8, bf16), 0.0) << "fp8 equals bf16 exactly: the FP8 products did not run";
    EXPECT_LE(fp8_deviation, 32 * bf16_deviation)
        << "mean |loss - fp32's| over the steps: fp8 " << fp8_deviation << ", bf16 " << bf16_deviation;

    // Every train line of the fp8 run carries its saturation counts per tensor class.
    std::ifstream metrics(directory.file("fp8") + "/metrics.jsonl");
    std::string line;
    int train_lines = 0;
    while (std::getline(metrics, line)) {
        const nlohmann::json json = nlohmann::json::parse(line);
        if (json["type"] != "train") continue;
        ++train_lines;
        ASSERT_TRUE(json.contains("fp8_saturated")) << line;
        for (const char* tensor_class : {"inputs", "weights", "gradients"})
            EXPECT_TRUE(json["fp8_saturated"][tensor_class].is_number_unsigned()) << line;
    }
    EXPECT_EQ(train_lines, static_cast<int>(fp8.size()));
}

TEST(TrainFp8, Gpt2RunTracksFp32WithinFp8sError) {
    expect_fp8_tracks_fp32(testing_support::tiny_train_options(""));
}

TEST(TrainFp8, LlamaRunTracksFp32WithinFp8sError) {
    expect_fp8_tracks_fp32(testing_support::tiny_llama_train_options(""));
}

// Evaluations between steps quantize with the training's delayed scales and record amaxes like any
// forward pass; the trainer puts the state back after them, so that an fp8 run trains the same
// whether and however often it evaluates (without it, step 4 below differs).
TEST(TrainFp8, EvaluatingDoesNotChangeTheTraining) {
    test::TempDirectory directory("mixgpt_train_fp8_eval");
    TrainOptions options = testing_support::tiny_train_options("");
    options.eval_interval = 2;
    const auto evaluated = run_losses(options, Precision::fp8, directory.file("evaluated"));
    options.eval_interval = 0;  // once, after the last step
    const auto not_evaluated = run_losses(options, Precision::fp8, directory.file("not_evaluated"));
    EXPECT_EQ(evaluated, not_evaluated);
}

}  // namespace
}  // namespace mixgpt
