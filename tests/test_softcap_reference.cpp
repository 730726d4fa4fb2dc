// The logit soft-cap (GPTConfig::logit_softcap) and the z-loss (GPT::set_z_loss) against the
// float64 whole-model reference (tests/reference_f64_gpt.h), both families, the cap bending most
// logits (cap 1 over logits of a few units) and the z-loss weight large enough to move the
// gradients. fp32 on the CPU: the mean loss within 1e-6 relative, per-position losses, z-loss
// terms and every gradient tensor within 1e-5 relative norm error. bf16 and fp16 on the CPU: the
// losses' and the gradients' errors against float64 at most twice those of the same model without
// cap and z-loss in that precision against its own float64 reference (GUIDE.md 2.7).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/log.h"
#include "tests/reference_f64_gpt.h"
#include "tests/test_cpu_support.h"
#include "tests/test_model_support.h"

namespace mixgpt {
namespace {

constexpr int kBatch = 2, kLength = 16;
constexpr float kSoftcap = 1.f, kZLoss = 0.05f;

GPTConfig family_config(Arch arch, float softcap) {
    GPTConfig config = arch == Arch::llama ? test::tiny_llama_config() : test::tiny_config();
    config.logit_softcap = softcap;
    return config;
}

struct Errors : test::ReferenceErrors {
    double z_losses = 0;    // of the z-loss terms (0 without a z-loss)
    double cap_effect = 0;  // how far the reference's losses move without the cap and the z-loss
};

// One training pass of a CPU model in `precision` against F64Gpt on the same parameters and tokens.
Errors measure(Arch arch, Precision precision, float softcap, float z_loss) {
    const GPTConfig config = family_config(arch, softcap);
    auto backend = make_backend({"cpu", 0, precision, 1});
    GPT model(*backend, config, kBatch, kLength, Recompute::none);
    model.set_z_loss(z_loss);
    const ParameterLayout& layout = model.layout();
    const std::vector<float> values = test::spread_parameters(layout, 7);
    model.load_master_parameters(values.data(), layout.total());
    const std::vector<int32_t> tokens = test::random_tokens(kBatch * kLength, config.vocab_size, 11);
    const std::vector<int32_t> targets = test::random_tokens(kBatch * kLength, config.vocab_size, 12);

    const test::PassResult result = test::training_pass(model, tokens, targets, kBatch, kLength);
    const F64Gpt reference_model(config, values);
    const F64Gpt::Pass reference = reference_model.forward_backward(tokens, targets, kBatch, kLength, z_loss);
    Errors errors;
    static_cast<test::ReferenceErrors&>(errors) = test::errors_against(result, reference, layout);
    if (z_loss > 0) {
        const TensorView terms = model.z_losses();  // (b, t) f32
        std::vector<float> got(static_cast<size_t>(terms.numel()));
        backend->copy_to_host(got.data(), terms.data, terms.bytes());
        errors.z_losses =
            relative_norm_error(std::vector<double>(got.begin(), got.end()), reference.z_losses);
    }
    const F64Gpt plain(family_config(arch, 0.f), values);
    errors.cap_effect = relative_norm_error(
        plain.forward_backward(tokens, targets, kBatch, kLength).gradients, reference.gradients);
    return errors;
}

class SoftcapReference : public ::testing::TestWithParam<Arch> {};

TEST_P(SoftcapReference, Fp32CpuMatchesFloat64) {
    for (const auto& [softcap, z_loss] :
         {std::pair{kSoftcap, 0.f}, std::pair{0.f, kZLoss}, std::pair{kSoftcap, kZLoss}}) {
        SCOPED_TRACE(format("softcap %g, z-loss %g", softcap, z_loss));
        const Errors e = measure(GetParam(), Precision::fp32, softcap, z_loss);
        EXPECT_LE(e.mean_loss, 1e-6);
        EXPECT_LE(e.losses, test::kFp32Tolerance);
        EXPECT_LE(e.z_losses, test::kFp32Tolerance);
        EXPECT_LE(e.worst_tensor, test::kFp32Tolerance);
        // The options change the gradients by far more than the tolerance: the test can fail.
        EXPECT_GE(e.cap_effect, 1e3 * test::kFp32Tolerance);
        RecordProperty(format("softcap_%g_zloss_%g", softcap, z_loss),
                       format("mean loss %.3g, worst gradient %.3g", e.mean_loss, e.worst_tensor));
    }
}

TEST_P(SoftcapReference, LowPrecisionWithinTwiceItsOwnErrorWithoutTheOptions) {
    for (Precision precision : {Precision::bf16, Precision::fp16}) {
        SCOPED_TRACE(precision_name(precision));
        const Errors plain = measure(GetParam(), precision, 0.f, 0.f);
        const Errors both = measure(GetParam(), precision, kSoftcap, kZLoss);
        EXPECT_LE(both.losses, 2 * plain.losses);
        EXPECT_LE(both.gradients, 2 * plain.gradients);
        RecordProperty(std::string(precision_name(precision)) + "_ratios",
                       format("losses %.3f, gradients %.3f", both.losses / plain.losses,
                              both.gradients / plain.gradients));
    }
}

// Evaluation, multiple-choice scoring and sampling read GPT::forward: its losses are the training
// pass's bit for bit (the classifier computes them the same way with or without gradients).
TEST_P(SoftcapReference, ForwardLossesAreTheTrainingPassLosses) {
    const GPTConfig config = family_config(GetParam(), kSoftcap);
    auto backend = make_backend({"cpu", 0, Precision::fp32, 1});
    GPT model(*backend, config, kBatch, kLength, Recompute::none);
    const std::vector<float> values = test::spread_parameters(model.layout(), 7);
    model.load_master_parameters(values.data(), model.layout().total());
    const std::vector<int32_t> tokens = test::random_tokens(kBatch * kLength, config.vocab_size, 11);
    const std::vector<int32_t> targets = test::random_tokens(kBatch * kLength, config.vocab_size, 12);
    const test::PassResult trained = test::training_pass(model, tokens, targets, kBatch, kLength);
    const test::IntTensor token_tensor(tokens, {kBatch, kLength}), target_tensor(targets, {kBatch, kLength});
    const TensorView losses = model.forward(token_tensor.view(), target_tensor.view());  // (B, T) f32
    std::vector<float> evaluated(static_cast<size_t>(losses.numel()));
    backend->copy_to_host(evaluated.data(), losses.data, losses.bytes());
    EXPECT_EQ(evaluated, trained.losses);
}

INSTANTIATE_TEST_SUITE_P(Families, SoftcapReference, ::testing::Values(Arch::gpt2, Arch::llama),
                         [](const ::testing::TestParamInfo<Arch>& info) {
                             return std::string(arch_name(info.param));
                         });

}  // namespace
}  // namespace mixgpt
