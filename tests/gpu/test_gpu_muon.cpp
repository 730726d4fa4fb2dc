// Muon's CUDA ops (kernels/cuda/muon.cu) through MuonStep against the CPU backend's by the GPU
// tests' rule (gpu_test_support.h: bf16 within twice the CPU's error against the float64 step of
// tests/reference_f64_muon.h, fp32 within 1e-5 of the CPU), a skipped step, and training with
// --optimizer muon on the device: bit-exact resume (also with --stochastic-rounding), and the
// stochastically rounded working copy bit for bit the CPU's.
#include <gtest/gtest.h>

#include "kernels/ops.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64_muon.h"
#include "tests/test_cpu_support.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "tests/train_equivalence.h"
#include "train/muon_step.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using gpu_test::TwinTensor;

constexpr float kLearningRate = 0.5f, kWeightDecay = 0.1f, kLossScale = 8.f;

// Two wide matrices of one shape (one batch), a tall one and a square one.
std::vector<MuonMatrix> test_matrices() {
    std::vector<MuonMatrix> matrices;
    int64_t offset = 0;
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{24, 72}, {24, 72}, {80, 16}, {32, 32}}) {
        matrices.push_back({"m" + std::to_string(matrices.size()), offset, rows, cols});
        offset += rows * cols;
    }
    return matrices;
}

std::vector<double> difference(const std::vector<double>& after, const std::vector<double>& before) {
    std::vector<double> out(after.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = after[i] - before[i];
    return out;
}

void run_step(Backend& backend, const std::vector<MuonMatrix>& matrices, const TensorView& params,
              const TensorView& grads, const TensorView& momentum, DType ns_dtype, int32_t skip) {
    MuonHyper hyper;
    hyper.learning_rate = kLearningRate;
    hyper.weight_decay = kWeightDecay;
    hyper.ns_dtype = ns_dtype;
    StepStatus host_status;
    host_status.loss_scale = kLossScale;
    host_status.skip = skip;
    Buffer status = backend.allocate(sizeof(StepStatus));
    backend.copy_to_backend(status.data(), &host_status, sizeof(StepStatus));
    MuonStep step(backend, matrices, ns_dtype);
    step.step(params, grads, momentum, TensorView(), hyper, status.as<StepStatus>());
    backend.synchronize();
}

class GpuMuonStep : public ::testing::TestWithParam<DType> {};

TEST_P(GpuMuonStep, MatchesTheCpuByTheGpuRule) {
    MIXGPT_GPU_OR_SKIP();
    SCOPED_TRACE(gpu_test::seed_note());
    const DType ns_dtype = GetParam();
    const auto cpu = make_backend({"cpu", 0, Precision::fp32, 0});
    const auto gpu = make_backend({"cuda", 0, Precision::fp32, 0});
    const std::vector<MuonMatrix> matrices = test_matrices();
    const int64_t n = matrices.back().offset + matrices.back().rows * matrices.back().cols;
    const uint32_t seed = gpu_test::run_seed();
    const std::vector<double> p0 = test::rounded(test::random_normal(n, seed, 0.02), DType::f32);
    const std::vector<double> g = test::rounded(test::random_normal(n, seed + 1, kLossScale), DType::f32);
    const std::vector<double> m0 = test::rounded(test::random_normal(n, seed + 2, 0.5), DType::f32);
    TwinTensor params(*cpu, *gpu, p0, DType::f32, {n}), grads(*cpu, *gpu, g, DType::f32, {n});
    TwinTensor momentum(*cpu, *gpu, m0, DType::f32, {n});
    run_step(*cpu, matrices, params.cpu(), grads.cpu(), momentum.cpu(), ns_dtype, 0);
    run_step(*gpu, matrices, params.gpu(), grads.gpu(), momentum.gpu(), ns_dtype, 0);

    std::vector<double> update, new_momentum;
    for (const MuonMatrix& matrix : matrices) {
        const auto part = [&](const std::vector<double>& arena) {
            return std::vector<double>(arena.begin() + matrix.offset,
                                       arena.begin() + matrix.offset + matrix.rows * matrix.cols);
        };
        F64MuonHyper hyper;
        hyper.loss_scale = kLossScale;
        hyper.learning_rate = kLearningRate;
        hyper.weight_decay = kWeightDecay;
        std::vector<double> p = part(p0), m = part(m0);
        f64_muon_step(p, m, part(g), matrix.rows, matrix.cols, hyper, DType::f32);
        const std::vector<double> step = difference(p, part(p0));
        update.insert(update.end(), step.begin(), step.end());
        new_momentum.insert(new_momentum.end(), m.begin(), m.end());
    }
    const Precision rule = ns_dtype == DType::bf16 ? Precision::bf16 : Precision::fp32;
    gpu_test::expect_matches_cpu(difference(params.gpu_values(), p0), difference(params.cpu_values(), p0),
                                 update, DType::f32, rule, std::string("update, ") + dtype_name(ns_dtype));
    gpu_test::expect_matches_cpu(momentum.gpu_values(), momentum.cpu_values(), new_momentum, DType::f32,
                                 Precision::fp32, "momentum");
}

INSTANTIATE_TEST_SUITE_P(GpuNewtonSchulz, GpuMuonStep, ::testing::Values(DType::f32, DType::bf16),
                         [](const ::testing::TestParamInfo<DType>& info) { return dtype_name(info.param); });

TEST(GpuMuon, SkippedStepChangesNeitherParamsNorMomentum) {
    MIXGPT_GPU_OR_SKIP();
    const auto cpu = make_backend({"cpu", 0, Precision::fp32, 0});
    const auto gpu = make_backend({"cuda", 0, Precision::fp32, 0});
    const std::vector<MuonMatrix> matrices = test_matrices();
    const int64_t n = matrices.back().offset + matrices.back().rows * matrices.back().cols;
    const std::vector<double> p0 = test::rounded(test::random_normal(n, 41, 0.02), DType::f32);
    const std::vector<double> m0 = test::rounded(test::random_normal(n, 42, 0.5), DType::f32);
    TwinTensor params(*cpu, *gpu, p0, DType::f32, {n}),
        grads(*cpu, *gpu, test::random_normal(n, 43), DType::f32, {n});
    TwinTensor momentum(*cpu, *gpu, m0, DType::f32, {n});
    run_step(*gpu, matrices, params.gpu(), grads.gpu(), momentum.gpu(), DType::bf16, 1);
    EXPECT_EQ(params.gpu_values(), p0);
    EXPECT_EQ(momentum.gpu_values(), m0);
}

// --stochastic-rounding: the device rounds the bf16 working copy with the CPU's bits (one hash of
// seed and index), masters equal within fp32 (the same products in another order).
TEST(GpuMuon, StochasticRoundingDrawsTheCpusBits) {
    MIXGPT_GPU_OR_SKIP();
    SCOPED_TRACE(gpu_test::seed_note());
    const auto cpu = make_backend({"cpu", 0, Precision::bf16, 0});
    const auto gpu = make_backend({"cuda", 0, Precision::bf16, 0});
    const int64_t rows = 48, cols = 40, n = rows * cols;
    const std::vector<double> p0 = test::rounded(test::random_normal(n, 44, 0.02), DType::f32);
    const TwinTensor params(*cpu, *gpu, p0, DType::f32, {rows, cols});
    const TwinTensor x(*cpu, *gpu, test::random_normal(n, gpu_test::run_seed()), DType::bf16, {rows, cols});
    const TwinTensor working = TwinTensor::poisoned(*cpu, *gpu, DType::bf16, {rows, cols});
    StepStatus cpu_status;
    Buffer gpu_status = gpu->allocate(sizeof(StepStatus));
    gpu->copy_to_backend(gpu_status.data(), &cpu_status, sizeof(StepStatus));
    cpu->muon_update(params.cpu(), working.cpu(), x.cpu(), 0.5f, 1.f, 0.1f, true, gpu_test::run_seed(),
                     &cpu_status);
    gpu->muon_update(params.gpu(), working.gpu(), x.gpu(), 0.5f, 1.f, 0.1f, true, gpu_test::run_seed(),
                     gpu_status.as<StepStatus>());
    gpu->synchronize();
    EXPECT_EQ(params.gpu_values(), params.cpu_values());
    EXPECT_EQ(working.gpu_values(), working.cpu_values());
    EXPECT_NE(working.cpu_values(), test::rounded(params.cpu_values(), DType::bf16));  // not to nearest
}

// tests/train_equivalence.h on the device: 8 steps straight equal 4, a SIGTERM and 4 resumed.
TEST(GpuMuon, TrainingResumesBitExactly) {
    MIXGPT_GPU_OR_SKIP();
    for (const Precision precision : {Precision::fp32, Precision::bf16}) {
        SCOPED_TRACE(precision_name(precision));
        TrainOptions options = testing_support::tiny_train_options("");
        options.device = "cuda";
        options.precision = precision;
        options.optimizer = OptimizerKind::muon;
        testing_support::expect_resume_equals_straight_run(
            options, std::string("mixgpt_gpu_muon_resume_") + precision_name(precision));
    }
    TrainOptions stochastic = testing_support::tiny_train_options("");
    stochastic.device = "cuda";
    stochastic.precision = Precision::bf16;
    stochastic.stochastic_rounding = true;
    stochastic.optimizer = OptimizerKind::muon;
    testing_support::expect_resume_equals_straight_run(stochastic, "mixgpt_gpu_muon_resume_stochastic");
}

}  // namespace
}  // namespace mixgpt
