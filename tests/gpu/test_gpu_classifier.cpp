// The CUDA fused classifier against the CPU backend, per precision: losses alone, and
// losses with the logit gradients written in place (padded columns zeroed), the loss
// scale read from a StepStatus in device memory.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinIndices;
using gpu_test::TwinTensor;

class GpuClassifier : public gpu_test::GpuPrecisionTest {};

TEST_P(GpuClassifier, LossesAndInPlaceGradients) {
    // Vp = 1040 is 16-byte divisible for every dtype (vector path); Vp = 1037 is not.
    const int N = 9, V = 1000;
    const float gradient_scale = 1.f / N, loss_scale = 64.f;
    StepStatus host_status;
    host_status.loss_scale = loss_scale;
    Buffer status_memory = gpu->allocate(sizeof(StepStatus));
    gpu->copy_to_backend(status_memory.data(), &host_status, sizeof host_status);
    const auto* device_status = status_memory.as<const StepStatus>();

    for (int Vp : {1040, 1037}) {
        SCOPED_TRACE("Vp = " + std::to_string(Vp));
        const TwinIndices targets(*cpu, *gpu, test::random_tokens(N, V, seed(1)), {N});
        // Logits with std 3: a peaked softmax, far from uniform.
        const TwinTensor logits = act_tensor(test::random_normal(N * Vp, seed(2), 3.0), {N, Vp});
        const F64Classifier ref =
            f64_classifier(logits.cpu_values(), targets.values(), N, Vp, V, gradient_scale, loss_scale);

        const TwinTensor losses_only = poisoned(DType::f32, {N});
        cpu->classifier(losses_only.cpu(), logits.cpu(), targets.cpu(), V, false, gradient_scale,
                        &host_status);
        gpu->classifier(losses_only.gpu(), logits.gpu(), targets.gpu(), V, false, gradient_scale,
                        device_status);
        expect_close(losses_only, ref.losses, "losses (no gradient)");

        const TwinTensor losses = poisoned(DType::f32, {N});
        cpu->classifier(losses.cpu(), logits.cpu(), targets.cpu(), V, true, gradient_scale, &host_status);
        gpu->classifier(losses.gpu(), logits.gpu(), targets.gpu(), V, true, gradient_scale, device_status);
        expect_close(losses, ref.losses, "losses");
        expect_close(logits, ref.dlogits, "logit gradients");
    }
}

TEST_P(GpuClassifier, NullStatusMeansScaleOne) {
    const int N = 4, Vp = 256, V = 200;
    const TwinIndices targets(*cpu, *gpu, test::random_tokens(N, V, seed(3)), {N});
    const TwinTensor logits = act_tensor(test::random_normal(N * Vp, seed(4)), {N, Vp});
    const F64Classifier ref = f64_classifier(logits.cpu_values(), targets.values(), N, Vp, V, 0.5, 1.0);
    const TwinTensor losses = poisoned(DType::f32, {N});
    cpu->classifier(losses.cpu(), logits.cpu(), targets.cpu(), V, true, 0.5f, nullptr);
    gpu->classifier(losses.gpu(), logits.gpu(), targets.gpu(), V, true, 0.5f, nullptr);
    expect_close(losses, ref.losses, "losses");
    expect_close(logits, ref.dlogits, "logit gradients");
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuClassifier,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
