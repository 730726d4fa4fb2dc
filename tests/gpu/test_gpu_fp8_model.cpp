// The whole model under --precision fp8 on the CUDA backend (cuBLASLt FP8 products, the device's
// quantization and scaling kernels) against the CPU backend's fp8 run (the exact emulation), for
// both families, as tests/gpu/test_gpu_model.cpp judges the other precisions: the GPU's error and
// the CPU's, both against the CPU's fp32 run, and the GPU's within twice the CPU's. A second pass
// after a delayed-scaling update uses the scales the first recorded; recomputation changes no bit.
// B T = 32 rows: cuBLASLt multiplies FP8 only with K (here B T, in the weight gradient) a multiple
// of 16.
#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "tests/gpu/gpu_test_support.h"
#include "tests/test_cpu_support.h"
#include "tests/test_model_support.h"

namespace mixgpt {
namespace {

constexpr int kBatch = 2, kLength = 16;

struct Fp8Run {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<GPT> model;
};

Fp8Run make_run(const std::string& device, Precision precision, const GPTConfig& config,
                Recompute recompute = Recompute::none) {
    Fp8Run run;
    run.backend = make_backend({device, 0, precision, 0});
    Fp8Options options;
    options.scaling.history_length = 4;
    options.head = true;
    run.model =
        std::make_unique<GPT>(*run.backend, config, kBatch, kLength, recompute, ParameterSharding{}, options);
    const std::vector<float> values = test::spread_parameters(run.model->layout(), gpu_test::run_seed());
    run.model->load_master_parameters(values.data(), static_cast<int64_t>(values.size()));
    return run;
}

std::vector<double> widen(const std::vector<float>& values) { return {values.begin(), values.end()}; }

class GpuFp8Model : public ::testing::TestWithParam<bool> {
protected:
    void SetUp() override {
        MIXGPT_FP8_GPU_OR_SKIP();
        trace_.emplace(__FILE__, __LINE__, gpu_test::seed_note());
        config_ = GetParam() ? test::tiny_llama_config() : test::tiny_config();
        tokens_ = test::random_tokens(kBatch * kLength, config_.vocab_size, gpu_test::run_seed());
        targets_ = test::random_tokens(kBatch * kLength, config_.vocab_size, gpu_test::run_seed() + 1);
    }
    test::PassResult pass(Fp8Run& run) {
        return test::training_pass(*run.model, tokens_, targets_, kBatch, kLength);
    }
    std::optional<::testing::ScopedTrace> trace_;
    GPTConfig config_;
    std::vector<int32_t> tokens_, targets_;
};

TEST_P(GpuFp8Model, TwoPassesMatchTheCpuWithinTwiceItsError) {
    Fp8Run reference_run = make_run("cpu", Precision::fp32, config_);
    Fp8Run cpu_run = make_run("cpu", Precision::fp8, config_);
    Fp8Run gpu_run = make_run("cuda", Precision::fp8, config_);
    const test::PassResult reference = pass(reference_run);
    for (int step = 0; step < 2; ++step) {
        const test::PassResult cpu = pass(cpu_run), gpu = pass(gpu_run);
        gpu_test::expect_matches_cpu(widen(gpu.losses), widen(cpu.losses), widen(reference.losses),
                                     DType::f32, Precision::fp8, "losses, pass " + std::to_string(step));
        gpu_test::expect_matches_cpu(widen(gpu.gradients), widen(cpu.gradients), widen(reference.gradients),
                                     DType::f32, Precision::fp8, "gradients, pass " + std::to_string(step));
        cpu_run.model->fp8()->step_done();
        gpu_run.model->fp8()->step_done();
    }
}

TEST_P(GpuFp8Model, RecomputationChangesNoBit) {
    std::vector<test::PassResult> results;
    for (Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full}) {
        Fp8Run run = make_run("cuda", Precision::fp8, config_, recompute);
        results.push_back(pass(run));
    }
    for (size_t i = 1; i < results.size(); ++i) {
        EXPECT_EQ(results[i].losses, results[0].losses) << recompute_name(static_cast<Recompute>(i));
        EXPECT_EQ(results[i].gradients, results[0].gradients) << recompute_name(static_cast<Recompute>(i));
    }
}

INSTANTIATE_TEST_SUITE_P(GpuFamilies, GpuFp8Model, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                             return info.param ? "llama" : "gpt2";
                         });

}  // namespace
}  // namespace mixgpt
