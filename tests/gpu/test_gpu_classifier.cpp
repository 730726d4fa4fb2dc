// The CUDA fused classifier against the CPU backend, per precision: losses alone, and
// losses with the logit gradients written in place (padded columns zeroed), the loss
// scale read from a StepStatus in device memory; with the logit soft-cap and the z-loss,
// and the logit_softcap op.
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
        cpu->classifier(losses_only.cpu(), TensorView(), logits.cpu(), targets.cpu(), {V}, false,
                        gradient_scale, &host_status);
        gpu->classifier(losses_only.gpu(), TensorView(), logits.gpu(), targets.gpu(), {V}, false,
                        gradient_scale, device_status);
        expect_close(losses_only, ref.losses, "losses (no gradient)");

        const TwinTensor losses = poisoned(DType::f32, {N});
        cpu->classifier(losses.cpu(), TensorView(), logits.cpu(), targets.cpu(), {V}, true, gradient_scale,
                        &host_status);
        gpu->classifier(losses.gpu(), TensorView(), logits.gpu(), targets.gpu(), {V}, true, gradient_scale,
                        device_status);
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
    cpu->classifier(losses.cpu(), TensorView(), logits.cpu(), targets.cpu(), {V}, true, 0.5f, nullptr);
    gpu->classifier(losses.gpu(), TensorView(), logits.gpu(), targets.gpu(), {V}, true, 0.5f, nullptr);
    expect_close(losses, ref.losses, "losses");
    expect_close(logits, ref.dlogits, "logit gradients");
}

TEST_P(GpuClassifier, SoftcapAndZLoss) {
    const int N = 9, V = 1000, Vp = 1040;
    const ClassifierParams params{V, 15.f, 1e-2f};
    const TwinIndices targets(*cpu, *gpu, test::random_tokens(N, V, seed(5)), {N});
    // Logits with std 20 against the cap of 15: the bend of tanh and its saturation.
    const std::vector<double> values = test::random_normal(N * Vp, seed(6), 20.0);
    const TwinTensor logits = act_tensor(values, {N, Vp});
    const F64Classifier ref = f64_classifier(logits.cpu_values(), targets.values(), N, Vp, V, 0.25, 1.0,
                                             params.softcap, params.z_loss);
    const TwinTensor losses = poisoned(DType::f32, {N}), z_losses = poisoned(DType::f32, {N});
    cpu->classifier(losses.cpu(), z_losses.cpu(), logits.cpu(), targets.cpu(), params, true, 0.25f, nullptr);
    gpu->classifier(losses.gpu(), z_losses.gpu(), logits.gpu(), targets.gpu(), params, true, 0.25f, nullptr);
    expect_close(losses, ref.losses, "capped losses");
    expect_close(z_losses, ref.z_losses, "z-loss terms");
    expect_close(logits, ref.dlogits, "capped logit gradients with z-loss");

    // Without gradients the logits become the capped ones, as the logit_softcap op makes them.
    const TwinTensor forward_logits = act_tensor(values, {N, Vp});
    const TwinTensor forward_losses = poisoned(DType::f32, {N});
    cpu->classifier(forward_losses.cpu(), TensorView(), forward_logits.cpu(), targets.cpu(), params, false,
                    1.f, nullptr);
    gpu->classifier(forward_losses.gpu(), TensorView(), forward_logits.gpu(), targets.gpu(), params, false,
                    1.f, nullptr);
    expect_close(forward_losses, ref.losses, "capped losses (no gradient)");
    expect_close(forward_logits, ref.capped, "capped logits");
    const TwinTensor alone = act_tensor(values, {N, Vp});
    gpu->logit_softcap(alone.gpu(), V, params.softcap);
    EXPECT_EQ(alone.gpu_values(), forward_logits.gpu_values()) << "logit_softcap against the classifier's";
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuClassifier,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
