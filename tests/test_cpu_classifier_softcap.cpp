// The CPU fused classifier's logit soft-cap and z-loss (kernels/ops.h, ClassifierParams) against
// the float64 reference, per precision: losses, z-loss terms and the in-place logit gradients;
// without gradients, the capped logits written in place and equal to the logit_softcap op's; the
// bad parameters refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "kernels/ops.h"
#include "tests/test_cpu_support.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

using test::HostTensor;
using test::IntTensor;

constexpr float kSoftcap = 5.f, kZLoss = 1e-2f;

class CpuClassifierSoftcap : public ::testing::TestWithParam<Precision> {
protected:
    DType act() const { return activation_dtype(GetParam()); }
    static constexpr int N = 6, V = 100, Vp = 128;
    std::unique_ptr<Backend> backend = make_backend({"cpu", 0, GetParam(), 0});
    const IntTensor targets{test::random_tokens(N, V, 94), {N}};
    // Logits with std 8 against a cap of 5: most of them in tanh's bend or saturated.
    const std::vector<double> values = test::random_normal(N * Vp, 95, 8.0);
};

TEST_P(CpuClassifierSoftcap, GradientsOfCappedLossAndZLoss) {
    HostTensor logits(values, act(), {N, Vp});
    const std::vector<double> inputs = logits.values();
    HostTensor losses(DType::f32, {N}), z_losses(DType::f32, {N});
    StepStatus status;
    status.loss_scale = 256.f;
    const float gradient_scale = 1.f / N;
    backend->classifier(losses.view(), z_losses.view(), logits.view(), targets.view(), {V, kSoftcap, kZLoss},
                        true, gradient_scale, &status);
    const F64Classifier ref =
        f64_classifier(inputs, targets.values(), N, Vp, V, gradient_scale, 256.0, kSoftcap, kZLoss);
    EXPECT_LE(relative_norm_error(losses.values(), ref.losses), test::kFp32Tolerance);
    EXPECT_LE(relative_norm_error(z_losses.values(), ref.z_losses), test::kFp32Tolerance);
    const std::vector<double> gradients = logits.values();
    EXPECT_LE(relative_norm_error(gradients, ref.dlogits), test::tolerance_for(ref.dlogits, act()));
    for (int i = 0; i < N; ++i)
        for (int j = V; j < Vp; ++j) ASSERT_EQ(gradients[static_cast<size_t>(i * Vp + j)], 0.0);
    // The cap and the z-loss change the gradients: the test can tell them apart from plain cross-entropy.
    const F64Classifier plain = f64_classifier(inputs, targets.values(), N, Vp, V, gradient_scale, 256.0);
    EXPECT_GT(relative_norm_error(gradients, plain.dlogits), 100 * test::tolerance_for(ref.dlogits, act()));
}

TEST_P(CpuClassifierSoftcap, WithoutGradientsTheLogitsBecomeTheCappedOnes) {
    HostTensor logits(values, act(), {N, Vp});
    const std::vector<double> inputs = logits.values();
    HostTensor losses(DType::f32, {N});
    backend->classifier(losses.view(), TensorView(), logits.view(), targets.view(), {V, kSoftcap, 0.f}, false,
                        1.f, nullptr);
    const F64Classifier ref = f64_classifier(inputs, targets.values(), N, Vp, V, 1.0, 1.0, kSoftcap);
    EXPECT_LE(relative_norm_error(losses.values(), ref.losses), test::kFp32Tolerance);
    const std::vector<double> capped = logits.values();
    EXPECT_LE(relative_norm_error(capped, ref.capped), test::tolerance_for(ref.capped, act()));
    for (int i = 0; i < N; ++i)
        for (int j = V; j < Vp; ++j)
            ASSERT_EQ(capped[static_cast<size_t>(i * Vp + j)], inputs[static_cast<size_t>(i * Vp + j)]);

    HostTensor alone(values, act(), {N, Vp});
    backend->logit_softcap(alone.view(), V, kSoftcap);
    EXPECT_EQ(alone.values(), capped);  // the same bits as the classifier's (KV-cached sampling)
}

TEST_P(CpuClassifierSoftcap, RefusesBadParameters) {
    HostTensor logits(values, act(), {N, Vp});
    HostTensor losses(DType::f32, {N});
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (const ClassifierParams params : {ClassifierParams{V, -1.f, 0.f}, ClassifierParams{V, inf, 0.f},
                                          ClassifierParams{V, 0.f, -1.f}, ClassifierParams{V, 0.f, nan}})
        EXPECT_THROW(backend->classifier(losses.view(), TensorView(), logits.view(), targets.view(), params,
                                         false, 1.f, nullptr),
                     Error);
    EXPECT_THROW(backend->logit_softcap(logits.view(), V, 0.f), Error);
}

INSTANTIATE_TEST_SUITE_P(Precisions, CpuClassifierSoftcap,
                         ::testing::Values(Precision::fp32, Precision::bf16, Precision::fp16),
                         [](const auto& info) { return std::string(precision_name(info.param)); });

}  // namespace
}  // namespace mixgpt
