// CPU fused classifier against the float64 reference: losses over the real
// vocabulary, logit gradients with gradient and loss scale, zero padded columns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/ops.h"
#include "tests/test_cpu_support.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

using test::HostTensor;
using test::IntTensor;

class CpuClassifier : public ::testing::TestWithParam<Precision> {
protected:
    DType act() const { return activation_dtype(GetParam()); }
    static constexpr int N = 6, V = 100, Vp = 128;
    std::unique_ptr<Backend> backend = make_backend({"cpu", 0, GetParam(), 0});
    const IntTensor targets{test::random_tokens(N, V, 90), {N}};
    const std::vector<double> values = test::random_normal(N * Vp, 91, 2.0);
};

TEST_P(CpuClassifier, LossesWithoutGradientLeaveLogitsAlone) {
    HostTensor logits(values, act(), {N, Vp});
    const std::vector<double> before = logits.values();
    HostTensor losses(DType::f32, {N});
    backend->classifier(losses.view(), TensorView(), logits.view(), targets.view(), {V}, false, 1.f, nullptr);
    const F64Classifier ref = f64_classifier(before, targets.values(), N, Vp, V, 1.0, 1.0);
    EXPECT_LE(relative_norm_error(losses.values(), ref.losses), test::kFp32Tolerance);
    EXPECT_EQ(logits.values(), before);
}

TEST_P(CpuClassifier, GradientsAreScaledAndZeroInPaddedColumns) {
    HostTensor logits(values, act(), {N, Vp});
    const std::vector<double> inputs = logits.values();
    HostTensor losses(DType::f32, {N});
    StepStatus status;
    status.loss_scale = 1024.f;
    const float gradient_scale = 1.f / N;
    backend->classifier(losses.view(), TensorView(), logits.view(), targets.view(), {V}, true, gradient_scale,
                        &status);
    const F64Classifier ref = f64_classifier(inputs, targets.values(), N, Vp, V, gradient_scale, 1024.0);
    EXPECT_LE(relative_norm_error(losses.values(), ref.losses), test::kFp32Tolerance);
    const std::vector<double> gradients = logits.values();
    EXPECT_LE(relative_norm_error(gradients, ref.dlogits), test::tolerance_for(ref.dlogits, act()));
    for (int i = 0; i < N; ++i)
        for (int j = V; j < Vp; ++j) ASSERT_EQ(gradients[static_cast<size_t>(i * Vp + j)], 0.0);
}

TEST_P(CpuClassifier, RejectsTargetsOutsideTheRealVocabulary) {
    HostTensor logits(values, act(), {N, Vp});
    HostTensor losses(DType::f32, {N});
    const IntTensor padded_target({0, 1, 2, 3, 4, V}, {N});
    EXPECT_THROW(backend->classifier(losses.view(), TensorView(), logits.view(), padded_target.view(), {V},
                                     false, 1.f, nullptr),
                 Error);
}

TEST_P(CpuClassifier, RejectsFloatTargets) {
    HostTensor logits(values, act(), {N, Vp});
    HostTensor losses(DType::f32, {N});
    const HostTensor float_targets(std::vector<double>(N, 1.0), DType::f32, {N});
    const std::string message = test::error_of([&] {
        backend->classifier(losses.view(), TensorView(), logits.view(), float_targets.view(), {V}, false, 1.f,
                            nullptr);
    });
    EXPECT_NE(message.find("classifier: targets is (6) fp32, expected (6) int32"), std::string::npos)
        << message;
}

INSTANTIATE_TEST_SUITE_P(Precisions, CpuClassifier,
                         ::testing::Values(Precision::fp32, Precision::bf16, Precision::fp16),
                         [](const auto& info) { return std::string(precision_name(info.param)); });

// FP16 storage of scaled logit gradients overflows like on a GPU: a loss scale of 2^20 times
// gradients near 1 exceeds fp16's 65504, so the stored gradients become infinite.
TEST(CpuClassifierFp16, LargeLossScaleOverflowsToInfinity) {
    auto backend = make_backend({"cpu", 0, Precision::fp16, 0});
    HostTensor logits(std::vector<double>(128, 0.0), DType::f16, {1, 128});
    HostTensor losses(DType::f32, {1});
    const IntTensor target({1}, {1});
    StepStatus status;
    status.loss_scale = 1048576.f;
    backend->classifier(losses.view(), TensorView(), logits.view(), target.view(), {2}, true, 1.f, &status);
    EXPECT_TRUE(std::isinf(logits.values()[0]));
}

// GPT-2's vocabulary, logits spread from a few units to tens of units, half the rows confident
// (the target 12 above every other logit, so their softmax tails are the terms below half an ulp
// of the running sum that a float sum drops): each loss within 4 ulps of the float64 reference.
TEST(CpuClassifierGpt2Vocabulary, LossesWithin4UlpsOfFloat64) {
    constexpr int N = 8, V = 50257, Vp = 50304;
    constexpr double kSpreads[] = {2.0, 8.0, 16.0, 32.0};
    std::vector<double> values = test::random_normal(static_cast<size_t>(N) * Vp, 92);
    const std::vector<int32_t> targets = test::random_tokens(N, V, 93);
    for (int i = 0; i < N; ++i) {
        double* row = values.data() + static_cast<size_t>(i) * Vp;
        for (int j = 0; j < Vp; ++j) row[j] *= kSpreads[i % 4];
        if (i % 2 == 1) row[targets[static_cast<size_t>(i)]] = *std::max_element(row, row + V) + 12.0;
    }
    auto backend = make_backend({"cpu", 0, Precision::fp32, 0});
    HostTensor logits(values, DType::f32, {N, Vp});
    const F64Classifier ref = f64_classifier(logits.values(), targets, N, Vp, V, 1.0, 1.0);
    HostTensor losses(DType::f32, {N});
    backend->classifier(losses.view(), TensorView(), logits.view(), IntTensor(targets, {N}).view(), {V},
                        false, 1.f, nullptr);
    const std::vector<double> got = losses.values();
    for (int i = 0; i < N; ++i) {
        const auto expected = static_cast<float>(ref.losses[static_cast<size_t>(i)]);
        const double ulp = std::nextafter(expected, INFINITY) - expected;
        EXPECT_LE(std::abs(got[static_cast<size_t>(i)] - ref.losses[static_cast<size_t>(i)]), 4 * ulp)
            << "row " << i << ": loss " << got[static_cast<size_t>(i)] << ", float64 "
            << ref.losses[static_cast<size_t>(i)];
    }
}

}  // namespace
}  // namespace mixgpt
