// Loss scaling on the CPU backend with fp16 storage rounding: without scaling, the gradients of a
// large-batch step underflow in fp16 (counted); scaled, they match fp32 as closely as fp16 does at
// an ordinary scale; an injected overflow skips the step, halves the scale and leaves the weights
// untouched; the scale grows after the growth interval. Plus the --loss-scale option.
#include <gtest/gtest.h>

#include <limits>

#include "core/error.h"
#include "model/token_batch.h"
#include "tests/test_train_support.h"
#include "dist/communicator.h"
#include "train/loss_scaling.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

using namespace testing_support;

constexpr int kBatch = 2, kSeqLen = 16;

TEST(LossScaleTest, ParsesThePolicy) {
    EXPECT_EQ(parse_loss_scale("auto", Precision::fp16).mode, LossScaleMode::dynamic);
    EXPECT_EQ(parse_loss_scale("auto", Precision::fp16).initial_scale, 65536.f);
    for (Precision precision : {Precision::fp32, Precision::tf32, Precision::bf16}) {
        EXPECT_EQ(parse_loss_scale("auto", precision).mode, LossScaleMode::none);
        EXPECT_EQ(parse_loss_scale("auto", precision).initial_status().loss_scale, 1.f);
    }
    EXPECT_EQ(parse_loss_scale("dynamic", Precision::bf16).mode, LossScaleMode::dynamic);
    const LossScalePolicy fixed = parse_loss_scale("static:1024", Precision::fp16);
    EXPECT_EQ(fixed.mode, LossScaleMode::fixed);
    EXPECT_EQ(fixed.initial_status().loss_scale, 1024.f);
    EXPECT_FALSE(fixed.config().dynamic);
    EXPECT_EQ(parse_loss_scale("none", Precision::fp16).mode, LossScaleMode::none);
    const LossScaleConfig dynamic = parse_loss_scale("dynamic", Precision::fp16).config();
    EXPECT_TRUE(dynamic.dynamic);
    EXPECT_EQ(dynamic.growth_factor, 2.f);
    EXPECT_EQ(dynamic.backoff_factor, 0.5f);
    EXPECT_EQ(dynamic.growth_interval, 2000);
    EXPECT_EQ(dynamic.min_scale, 1.f);
    for (const char* bad : {"static:", "static:abc", "static:0", "static:-4", "dynamic2", ""})
        EXPECT_THROW(parse_loss_scale(bad, Precision::fp16), Error) << bad;
}

// Gradients of one forward/backward with `gradient_scale` and `loss_scale`, divided by the loss
// scale again.
std::vector<float> unscaled_gradients(Precision precision, float gradient_scale, float loss_scale,
                                      const std::vector<int32_t>& windows) {
    const std::unique_ptr<Backend> backend = cpu_backend(precision);
    GPT model(*backend, tiny_config(), kBatch, kSeqLen, Recompute::none);
    load_initial_parameters(model, 3);
    TokenBatch batch(*backend, kBatch, kSeqLen);
    batch.upload(windows.data());
    StepStatus status;
    status.loss_scale = loss_scale;
    Buffer device_status = backend->allocate(sizeof(StepStatus));
    backend->copy_to_backend(device_status.data(), &status, sizeof(StepStatus));
    model.zero_gradients();
    model.forward_backward(batch.inputs(), batch.targets(), gradient_scale, device_status.as<StepStatus>());
    std::vector<float> gradients = read_floats(*backend, model.gradients());
    for (float& g : gradients) g /= loss_scale;
    return gradients;
}

TEST(LossScaleTest, ScalingRecoversGradientsThatUnderflowInFp16) {
    const std::vector<int32_t> windows = random_windows(kBatch, kSeqLen, tiny_config().vocab_size, 8);
    // A step over 2^20 tokens: each token's loss is weighted 2^-20, as with a 1M-token batch.
    const float large_batch = 1.f / (1 << 20), ordinary = 1.f / (kBatch * kSeqLen);
    const std::vector<float> reference = unscaled_gradients(Precision::fp32, large_batch, 1.f, windows);
    const std::vector<float> unscaled = unscaled_gradients(Precision::fp16, large_batch, 1.f, windows);
    const std::vector<float> scaled = unscaled_gradients(Precision::fp16, large_batch, 65536.f, windows);

    int64_t nonzero = 0, lost = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
        if (reference[i] == 0.f) continue;
        ++nonzero;
        if (unscaled[i] == 0.f) ++lost;
    }
    // fp16 at an ordinary gradient scale (no underflow): the error fp16 storage achieves.
    const double fp16_error = relative_error(unscaled_gradients(Precision::fp16, ordinary, 1.f, windows),
                                             unscaled_gradients(Precision::fp32, ordinary, 1.f, windows));
    const double unscaled_error = relative_error(unscaled, reference);
    const double scaled_error = relative_error(scaled, reference);
    std::printf(
        "fp16 large-batch gradients: %lld of %lld nonzero elements lost without scaling (error %.3g); "
        "scaled by 2^16: error %.3g; fp16 at an ordinary scale: error %.3g\n",
        static_cast<long long>(lost), static_cast<long long>(nonzero), unscaled_error, scaled_error,
        fp16_error);
    EXPECT_GT(lost, nonzero / 10);                  // whole elements flushed to zero
    EXPECT_GT(unscaled_error, 100 * scaled_error);  // and most of the gradient's norm gone
    EXPECT_LE(scaled_error, 2 * fp16_error);
}

struct Fp16Run {
    std::unique_ptr<Backend> backend = cpu_backend(Precision::fp16);
    GPT model{*backend, tiny_config(), kBatch, kSeqLen, Recompute::none};
    SingleProcessCommunicator communicator;
    std::unique_ptr<TrainStep> step;

    explicit Fp16Run(const LossScalePolicy& policy) {
        load_initial_parameters(model, 3);
        step = std::make_unique<TrainStep>(model, communicator, 1, policy.config(), policy.initial_status());
    }
    StepResult run(const std::vector<int32_t>& windows, bool inject_overflow) {
        step->begin();
        step->micro_step(windows.data());
        if (inject_overflow) {
            const float infinity = std::numeric_limits<float>::infinity();
            backend->copy_to_backend(static_cast<float*>(model.gradients().data) + 123, &infinity,
                                     sizeof(float));
        }
        AdamWHyper hyper;
        hyper.learning_rate = 1e-3f;
        step->finish(hyper);
        return step->result();
    }
};

TEST(LossScaleTest, InjectedOverflowSkipsTheStepHalvesTheScaleAndKeepsTheWeights) {
    const std::vector<int32_t> windows = random_windows(kBatch, kSeqLen, tiny_config().vocab_size, 8);
    Fp16Run run(parse_loss_scale("auto", Precision::fp16));
    const StepResult clean = run.run(windows, false);
    ASSERT_EQ(clean.status.skip, 0);
    ASSERT_EQ(clean.status.loss_scale, 65536.f);
    const std::vector<float> masters = read_floats(*run.backend, run.model.master_parameters());
    const TensorView working_view = run.model.working_parameters();
    std::vector<uint16_t> working(static_cast<size_t>(working_view.numel()));
    run.backend->copy_to_host(working.data(), working_view.data, working_view.bytes());
    const OptimizerMoments moments = run.step->download_moments();

    const StepResult overflow = run.run(windows, true);
    EXPECT_EQ(overflow.status.skip, 1);
    EXPECT_EQ(overflow.status.loss_scale, 32768.f);
    EXPECT_EQ(overflow.status.skipped_steps, 1);
    EXPECT_EQ(overflow.status.optimizer_steps, 1);
    EXPECT_EQ(overflow.status.clean_steps, 0);
    EXPECT_TRUE(std::isfinite(overflow.loss));
    EXPECT_EQ(read_floats(*run.backend, run.model.master_parameters()), masters);
    std::vector<uint16_t> working_after(working.size());
    run.backend->copy_to_host(working_after.data(), working_view.data, working_view.bytes());
    EXPECT_EQ(working_after, working);
    const OptimizerMoments moments_after = run.step->download_moments();
    EXPECT_EQ(moments_after.m, moments.m);
    EXPECT_EQ(moments_after.v, moments.v);

    const StepResult next = run.run(windows, false);  // the run goes on at the lower scale
    EXPECT_EQ(next.status.skip, 0);
    EXPECT_EQ(next.status.optimizer_steps, 2);
    EXPECT_EQ(next.status.loss_scale, 32768.f);
}

TEST(LossScaleTest, ScaleGrowsAfterTheIntervalAndNeverWithoutDynamicScaling) {
    const std::vector<int32_t> windows = random_windows(kBatch, kSeqLen, tiny_config().vocab_size, 8);
    Fp16Run dynamic(parse_loss_scale("dynamic", Precision::fp16, 3));
    for (int step = 1; step <= 2; ++step) {
        const StepResult result = dynamic.run(windows, false);
        EXPECT_EQ(result.status.loss_scale, 65536.f) << step;
        EXPECT_EQ(result.status.clean_steps, step);
    }
    const StepResult grown = dynamic.run(windows, false);
    EXPECT_EQ(grown.status.loss_scale, 131072.f);
    EXPECT_EQ(grown.status.clean_steps, 0);
    EXPECT_EQ(grown.status.skipped_steps, 0);

    for (const char* policy : {"static:1024", "none"}) {
        Fp16Run fixed(parse_loss_scale(policy, Precision::fp16, 1));
        const float scale = fixed.run(windows, false).status.loss_scale;
        EXPECT_EQ(fixed.run(windows, false).status.loss_scale, scale) << policy;
        const StepResult overflow = fixed.run(windows, true);
        EXPECT_EQ(overflow.status.skip, 1) << policy;
        EXPECT_EQ(overflow.status.skipped_steps, 1) << policy;
        EXPECT_EQ(overflow.status.loss_scale, scale) << policy;
    }
}

}  // namespace
}  // namespace mixgpt
