// train --telemetry-interval (issue 40, train/telemetry.h) on the CPU: one measured step's record
// against float64 statistics of the step's own tensors (tests/telemetry_check.h) in both
// families and in fp32, bf16 and fp16; a run with telemetry gives the same losses and weights bit
// for bit as one without, and writes a telemetry line every interval (under --zero:
// tests/mpi/test_mpi_telemetry.cpp). FP8:
// each FP8 tensor's amax, scale and saturated count (tests/telemetry_check.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "tests/telemetry_check.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;
using test::TempDirectory;

TEST(TrainTelemetry, Fp8TensorsAmaxScaleAndSaturation) {
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::fp8);
    {
        SCOPED_TRACE("delayed");
        test::expect_fp8_telemetry_matches(*backend, Fp8Scaling::delayed, 1e5f);
    }
    SCOPED_TRACE("current");
    test::expect_fp8_telemetry_matches(*backend, Fp8Scaling::current, 1e5f);
}

// A second measured step reads the FP8 state again (the kept copy's memory is reused): under
// delayed scaling its weights' scales are those the first step's amaxes gave, 448 / amax.
TEST(TrainTelemetry, Fp8SecondMeasuredStepSeesTheUpdatedScales) {
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::fp8);
    const GPTConfig config = tiny_config();
    Fp8Options fp8;
    fp8.scaling.history_length = 4;
    GPT model(*backend, config, 2, 16, Recompute::none, {}, fp8);
    load_initial_parameters(model, 21);
    const std::vector<int32_t> windows = random_windows(2, 16, config.vocab_size, 7);
    float loss_scale = 1;
    const TelemetryRecord first = test::measured_step(model, *backend, windows, &loss_scale);
    const TelemetryRecord second = test::measured_step(model, *backend, windows, &loss_scale);
    ASSERT_EQ(first.fp8.size(), second.fp8.size());
    int weights = 0;
    for (size_t k = 0; k < first.fp8.size(); ++k) {
        if (first.fp8[k].kind != "weight") continue;
        EXPECT_EQ(first.fp8[k].scale, 1.0) << k << ": the initial scale";
        EXPECT_EQ(second.fp8[k].scale, 448.f / static_cast<float>(first.fp8[k].amax)) << k;
        ++weights;
    }
    EXPECT_EQ(weights, 4 * config.n_layer);
}

// The memory plan's telemetry line (telemetry_bytes) is what a Telemetry and the FP8 state copy a
// measured step keeps allocate, byte for byte.
TEST(TrainTelemetry, MemoryPlanCountsWhatItAllocates) {
    for (Precision precision : {Precision::bf16, Precision::fp8}) {
        SCOPED_TRACE(precision_name(precision));
        const std::unique_ptr<Backend> backend = cpu_backend(precision);
        const GPTConfig config = tiny_config();
        Fp8Options fp8;
        fp8.scaling.history_length = 16;
        GPT model(*backend, config, 2, 16, Recompute::none, {}, fp8);
        const size_t before = backend->peak_memory_bytes();
        SingleProcessCommunicator alone;
        Telemetry telemetry(model, *backend, 1, alone);
        if (model.fp8() != nullptr) {
            model.fp8()->keep_next_step();
            model.fp8()->step_done();
        }
        EXPECT_EQ(backend->peak_memory_bytes() - before, telemetry_bytes(config, precision, 16));
    }
}

TEST(TrainTelemetry, RecordMatchesFloat64OfTheStepsTensors) {
    for (const GPTConfig& config : test::telemetry_configs())
        for (Precision precision : {Precision::fp32, Precision::bf16, Precision::fp16}) {
            SCOPED_TRACE(std::string(arch_name(config.arch)) + " " + precision_name(precision));
            const std::unique_ptr<Backend> backend = cpu_backend(precision);
            test::expect_telemetry_matches_f64(*backend, config);
        }
}

// The telemetry lines' steps of a metrics file.
std::vector<int64_t> telemetry_steps(const std::string& metrics_path) {
    std::vector<int64_t> steps;
    std::ifstream file(metrics_path);
    for (std::string line; std::getline(file, line);) {
        const nlohmann::json record = nlohmann::json::parse(line);
        if (record["type"] == "telemetry") steps.push_back(record["step"].get<int64_t>());
    }
    return steps;
}

TEST(TrainTelemetry, ChangesNoLossOrWeightBitAndWritesEveryInterval) {
    TempDirectory directory("mixgpt_telemetry_run");
    for (Precision precision : {Precision::fp32, Precision::fp16}) {
        SCOPED_TRACE(precision_name(precision));
        TrainOptions plain = tiny_train_options(directory.file(std::string("plain_") + precision_name(precision)));
        TrainOptions measured = tiny_train_options(directory.file(std::string("measured_") + precision_name(precision)));
        for (TrainOptions* options : {&plain, &measured}) {
            options->precision = precision;
            options->steps = 5;
        }
        measured.telemetry_interval = 2;
        const TrainResult a = run_training(plain), b = run_training(measured);
        EXPECT_EQ(train_losses(a.metrics_path), train_losses(b.metrics_path));
        EXPECT_EQ(read_checkpoint(a.last_checkpoint).parameters, read_checkpoint(b.last_checkpoint).parameters);
        EXPECT_EQ(telemetry_steps(b.metrics_path), (std::vector<int64_t>{2, 4}));
        EXPECT_TRUE(telemetry_steps(a.metrics_path).empty());
    }
}

// mixgpt study's grad_zero_fraction, counted on the backend: the exact zeros of a step's gradients
// (the vocabulary's padding rows at least), against a count on the host.
TEST(TrainTelemetry, GradientZeroFractionCountsTheZeros) {
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::bf16);
    GPT model(*backend, tiny_config(), 2, 16, Recompute::none);
    load_initial_parameters(model, 3);
    SingleProcessCommunicator alone;
    const LossScalePolicy policy = parse_loss_scale("auto", Precision::bf16);
    TrainStep step(model, alone, 1, policy.config(), policy.initial_status());
    std::vector<int32_t> windows = random_windows(2, 16, 5, 4);
    step.begin();
    step.micro_step(windows.data());
    const std::vector<float> gradients = read_floats(*backend, model.gradients());
    const double zeros = static_cast<double>(std::count(gradients.begin(), gradients.end(), 0.0f));
    EXPECT_GT(zeros, 0);
    EXPECT_EQ(gradient_zero_fraction(model, step.owned(), alone), zeros / static_cast<double>(gradients.size()));
}

}  // namespace
}  // namespace mixgpt
