// train --telemetry-interval's measurement (train/telemetry.h) on the CUDA backend: one measured
// step's record against float64 statistics of the step's own tensors, as on the CPU
// (tests/telemetry_check.h), in both families and in fp32, bf16 and fp16.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_support.h"
#include "tests/telemetry_check.h"

namespace mixgpt {
namespace {

class GpuTelemetry : public ::testing::TestWithParam<Precision> {};

TEST_P(GpuTelemetry, RecordMatchesFloat64OfTheStepsTensors) {
    MIXGPT_GPU_OR_SKIP();
    const std::unique_ptr<Backend> backend = make_backend({"cuda", 0, GetParam(), 0});
    for (const GPTConfig& config : test::telemetry_configs()) {
        SCOPED_TRACE(arch_name(config.arch));
        test::expect_telemetry_matches_f64(*backend, config);
    }
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuTelemetry,
                         ::testing::Values(Precision::fp32, Precision::bf16, Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
