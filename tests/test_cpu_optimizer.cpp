// CPU optimizer-step ops against the float64 reference: global gradient norm with
// non-finite detection, AdamW (unscale, clip, decay range, skip, working copy),
// loss-scale updates; and the element-wise cast and scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/ops.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using test::HostTensor;

constexpr int kCount = 1000;
constexpr int64_t kDecayCount = 600;

TEST(CpuOptimizer, GradNormSquaredAndNonFiniteDetection) {
    auto backend = make_backend({"cpu", 0, Precision::fp32, 0});
    HostTensor grads(test::random_normal(200000, 100), DType::f32, {200000});
    StepStatus status;
    status.skip = 1;
    backend->grad_norm_squared(&status, grads.view());
    const F64GradNorm ref = f64_grad_norm_squared(grads.values());
    EXPECT_LE(std::abs(status.grad_norm_squared - ref.norm_squared) / ref.norm_squared, test::kFp32Tolerance);
    EXPECT_EQ(status.skip, 0);

    for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
        grads.view().as<float>()[12345] = bad;
        backend->grad_norm_squared(&status, grads.view());
        EXPECT_EQ(status.skip, 1) << bad;
    }
}

TEST(CpuOptimizer, DecideSkipFollowsTheCombinedNorm) {
    auto backend = make_backend({"cpu", 0, Precision::fp32, 0});
    StepStatus status;
    for (float norm : {0.f, 3.5f, std::numeric_limits<float>::max()}) {
        status.grad_norm_squared = norm;
        status.skip = 1;
        backend->decide_skip(&status);
        EXPECT_EQ(status.skip, 0) << norm;
    }
    for (float norm : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
        status.grad_norm_squared = norm;
        status.skip = 0;
        backend->decide_skip(&status);
        EXPECT_EQ(status.skip, 1) << norm;
    }
}

struct AdamWCase {
    float loss_scale;
    float max_grad_norm;
};

class CpuAdamW : public ::testing::TestWithParam<AdamWCase> {};

TEST_P(CpuAdamW, StepMatchesReference) {
    const AdamWCase param = GetParam();
    auto backend = make_backend({"cpu", 0, Precision::fp32, 0});
    AdamWHyper hyper;
    hyper.learning_rate = 1e-2f;
    hyper.max_grad_norm = param.max_grad_norm;
    std::vector<double> params = test::rounded(test::random_normal(kCount, 110), DType::f32);
    std::vector<double> grads = test::rounded(test::random_normal(kCount, 111, param.loss_scale), DType::f32);
    std::vector<double> m = test::rounded(test::random_normal(kCount, 112, 0.1), DType::f32);
    std::vector<double> v(kCount);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(0.01 + 0.01 * std::abs(m[i]));
    HostTensor p_tensor(params, DType::f32, {kCount}), g_tensor(grads, DType::f32, {kCount});
    HostTensor m_tensor(m, DType::f32, {kCount}), v_tensor(v, DType::f32, {kCount});

    StepStatus status, reference_status;
    status.loss_scale = param.loss_scale;
    status.optimizer_steps = 4;
    backend->grad_norm_squared(&status, g_tensor.view());
    reference_status = status;
    for (int step = 0; step < 3; ++step) {
        backend->adamw_step(p_tensor.view(), g_tensor.view(), m_tensor.view(), v_tensor.view(), TensorView(),
                            kDecayCount, hyper, &status);
        f64_adamw_step(params, grads, m, v, kDecayCount, hyper, reference_status);
    }
    EXPECT_EQ(status.optimizer_steps, 7);
    EXPECT_EQ(reference_status.optimizer_steps, 7);
    EXPECT_LE(relative_norm_error(p_tensor.values(), params), test::kFp32Tolerance);
    EXPECT_LE(relative_norm_error(m_tensor.values(), m), test::kFp32Tolerance);
    EXPECT_LE(relative_norm_error(v_tensor.values(), v), test::kFp32Tolerance);
}

// Unscaled norms: sqrt(1000) ~ 31.6 (clipped to 1), and the same under a loss scale of 1024;
// max_grad_norm 0 disables clipping.
INSTANTIATE_TEST_SUITE_P(Cases, CpuAdamW,
                         ::testing::Values(AdamWCase{1.f, 1.f}, AdamWCase{1024.f, 1.f}, AdamWCase{1.f, 0.f},
                                           AdamWCase{1.f, 100.f}));

TEST(CpuOptimizer, SkippedStepChangesNothing) {
    auto backend = make_backend({"cpu", 0, Precision::bf16, 0});
    HostTensor p(test::random_normal(kCount, 120), DType::f32, {kCount});
    HostTensor g(test::random_normal(kCount, 121), DType::f32, {kCount});
    HostTensor m(DType::f32, {kCount}), v(DType::f32, {kCount}), working(DType::bf16, {kCount});
    StepStatus status;
    status.skip = 1;
    AdamWHyper hyper;
    hyper.learning_rate = 0.1f;
    const std::vector<double> before = p.values();
    backend->adamw_step(p.view(), g.view(), m.view(), v.view(), working.view(), kDecayCount, hyper, &status);
    EXPECT_EQ(p.values(), before);
    EXPECT_EQ(m.values(), std::vector<double>(kCount, 0.0));
    EXPECT_EQ(working.values(), std::vector<double>(kCount, 0.0));
    EXPECT_EQ(status.optimizer_steps, 0);
}

TEST(CpuOptimizer, WorkingCopyIsTheRoundedMasters) {
    for (Precision precision : {Precision::bf16, Precision::fp16}) {
        const DType dtype = activation_dtype(precision);
        auto backend = make_backend({"cpu", 0, precision, 0});
        HostTensor p(test::random_normal(kCount, 130), DType::f32, {kCount});
        HostTensor g(test::random_normal(kCount, 131), DType::f32, {kCount});
        HostTensor m(DType::f32, {kCount}), v(DType::f32, {kCount}), working(dtype, {kCount});
        StepStatus status;
        AdamWHyper hyper;
        hyper.learning_rate = 1e-3f;
        backend->adamw_step(p.view(), g.view(), m.view(), v.view(), working.view(), kDecayCount, hyper,
                            &status);
        EXPECT_EQ(working.values(), test::rounded(p.values(), dtype)) << precision_name(precision);
    }
}

// Stochastic rounding of the bf16 working copy: each value lands on one of its two bf16
// neighbours, and over many elements at the same master value the mean approaches it.
TEST(CpuOptimizer, StochasticRoundingIsUnbiased) {
    auto backend = make_backend({"cpu", 0, Precision::bf16, 0});
    const int n = 100000;
    const double master = 1.0 + 0.3 * std::ldexp(1.0, -7);  // 30% of the way from 1 to the next bf16
    HostTensor p(std::vector<double>(n, master), DType::f32, {n});
    HostTensor g(DType::f32, {n}), m(DType::f32, {n}), v(DType::f32, {n}), working(DType::bf16, {n});
    StepStatus status;
    AdamWHyper hyper;  // learning rate 0: the masters stay, only the working copy is written
    hyper.stochastic_rounding = true;
    hyper.seed = 7;
    backend->adamw_step(p.view(), g.view(), m.view(), v.view(), working.view(), 0, hyper, &status);
    double sum = 0.0;
    int up = 0;
    for (double value : working.values()) {
        ASSERT_TRUE(value == 1.0 || value == 1.0 + std::ldexp(1.0, -7)) << value;
        up += value > 1.0 ? 1 : 0;
        sum += value;
    }
    // Binomial(n, 0.3): the count of round-ups is within 5 standard deviations of 0.3 n.
    EXPECT_NEAR(up, 0.3 * n, 5.0 * std::sqrt(n * 0.3 * 0.7));
    EXPECT_NEAR(sum / n, master, 5.0 * std::sqrt(0.3 * 0.7 / n) * std::ldexp(1.0, -7));
}

TEST(CpuOptimizer, LossScaleUpdatesFollowTheReference) {
    auto backend = make_backend({"cpu", 0, Precision::fp16, 0});
    LossScaleConfig config;
    config.dynamic = true;
    config.growth_interval = 3;
    config.min_scale = 0.25f;
    config.max_scale = 64.f;
    StepStatus status, reference;
    status.loss_scale = reference.loss_scale = 8.f;
    // Growth to 16, backoff to the floor 0.25 (the last skip finds it there), then 30
    // clean steps: ten growth intervals, capped at 64.
    std::vector<int> skips = {0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1};
    skips.resize(skips.size() + 30, 0);
    float lowest = status.loss_scale;
    for (int skip : skips) {
        status.skip = reference.skip = skip;
        backend->update_loss_scale(&status, config);
        f64_update_loss_scale(reference, config);
        ASSERT_EQ(status.loss_scale, reference.loss_scale);
        ASSERT_EQ(status.clean_steps, reference.clean_steps);
        ASSERT_EQ(status.skipped_steps, reference.skipped_steps);
        lowest = std::min(lowest, status.loss_scale);
    }
    EXPECT_EQ(status.skipped_steps, 7);
    EXPECT_EQ(lowest, 0.25f);
    EXPECT_EQ(status.loss_scale, 64.f);

    config.dynamic = false;
    status.skip = 1;
    backend->update_loss_scale(&status, config);
    EXPECT_EQ(status.loss_scale, 64.f);
}

TEST(CpuElementwise, CastRoundsToNearestEvenAndScaleMultiplies) {
    auto backend = make_backend({"cpu", 0, Precision::bf16, 0});
    const std::vector<double> values = test::random_normal(3000, 140, 100.0);
    HostTensor source(values, DType::f32, {3000});
    for (DType dtype : {DType::bf16, DType::f16}) {
        HostTensor narrow(dtype, {3000});
        backend->cast(narrow.view(), source.view());
        EXPECT_EQ(narrow.values(), test::rounded(source.values(), dtype));
        HostTensor back(DType::f32, {3000});
        backend->cast(back.view(), narrow.view());
        EXPECT_EQ(back.values(), narrow.values());
    }
    backend->scale(source.view(), 0.5f);
    const std::vector<double> halved = source.values();
    for (size_t i = 0; i < values.size(); ++i)
        ASSERT_EQ(halved[i], static_cast<double>(static_cast<float>(values[i])) * 0.5);
}

}  // namespace
}  // namespace mixgpt
