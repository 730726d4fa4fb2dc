// train --telemetry-interval (issue 40, train/telemetry.h) on the CPU: one measured step's record
// against float64 statistics of the step's own tensors (tests/telemetry_check.h) in both
// families and in fp32, bf16 and fp16; a run with telemetry gives the same losses and weights bit
// for bit as one without, and writes a telemetry line every interval; refused under --zero.
#include <gtest/gtest.h>

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
using test::error_of;
using test::TempDirectory;

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

TEST(TrainTelemetry, RefusedUnderZeroInOneLine) {
    TrainOptions options = tiny_train_options("unused");
    options.telemetry_interval = 10;
    options.zero_optimizer = true;
    const std::string error = error_of([&] { plan_training(options, 256, 1); });
    EXPECT_NE(error.find("telemetry-interval: needs every fp32 master on each rank, which --zero shards"),
              std::string::npos)
        << error;
    EXPECT_EQ(error.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace mixgpt
