// train --telemetry-interval's measurement (train/telemetry.h) on the CUDA backend: one measured
// step's record against float64 statistics of the step's own tensors, as on the CPU
// (tests/telemetry_check.h), in both families and in fp32, bf16 and fp16; and an FP8 step's amax,
// scale and saturation per FP8 tensor, delayed and current scaling.
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

TEST(GpuTelemetryFp8, TensorsAmaxScaleAndSaturation) {
    MIXGPT_FP8_GPU_OR_SKIP();
    const std::unique_ptr<Backend> backend = make_backend({"cuda", 0, Precision::fp8, 0});
    {
        SCOPED_TRACE("delayed");
        test::expect_fp8_telemetry_matches(*backend, Fp8Scaling::delayed, 1e5f);
    }
    SCOPED_TRACE("current");
    test::expect_fp8_telemetry_matches(*backend, Fp8Scaling::current, 1e5f);
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuTelemetry,
                         ::testing::Values(Precision::fp32, Precision::bf16, Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
