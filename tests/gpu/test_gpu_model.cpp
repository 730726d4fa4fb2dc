// The whole GPT on the CUDA backend: forward and backward against the CPU backend for
// each precision, bit-identical repeated runs (training steps included), and KV-cached
// decoding against the full forward.
//
// The whole-model reference is the CPU backend's fp32 run (no float64 model exists):
// a tf32/bf16/fp16 GPU run must be within twice the CPU run's own error of the same
// precision, both measured against it; an fp32 GPU run within 1e-5 of the CPU's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "tests/gpu/gpu_test_support.h"
#include "tests/test_cpu_support.h"
#include "tests/test_model_support.h"

namespace mixgpt {
namespace {

constexpr int kBatch = 2, kLength = 12;
constexpr float kLossScale = 1024.f;  // as a trainer would use for fp16; exact in every precision

struct ModelRun {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<GPT> model;
    Buffer status_memory;  // one StepStatus in the backend's memory

    StepStatus* status() const { return status_memory.as<StepStatus>(); }
};

// The tiny GPT-2 with its logits soft-capped at 2 (issue 38): the cap bends its logits.
GPTConfig capped_config() {
    GPTConfig config = test::tiny_config();
    config.logit_softcap = 2.f;
    return config;
}

// The separator of the document mask, which random_batch places in every row.
constexpr int32_t kSeparator = 5;

// The model options of issue 38 beyond the soft-cap, and issue 39's document mask with positions
// restarted at each document, each in both families.
std::vector<GPTConfig> option_configs() {
    std::vector<GPTConfig> configs;
    for (const GPTConfig& family : {test::tiny_config(), test::tiny_llama_config()}) {
        GPTConfig relu2 = family, parameter_free = family, embedding_norm = family, qk_norm = family,
                  documents = family;
        relu2.mlp = MlpKind::relu2;
        parameter_free.norm_weights = false;
        embedding_norm.embedding_norm = true;
        qk_norm.qk_norm = true;
        documents.document_separator = kSeparator;
        documents.document_positions = true;
        configs.push_back(relu2);
        configs.push_back(parameter_free);
        configs.push_back(embedding_norm);
        configs.push_back(qk_norm);
        configs.push_back(documents);
    }
    return configs;
}

// What the cached-decoding test runs: the plain GPT-2, the capped one, and every option config.
std::vector<GPTConfig> decoding_configs() {
    std::vector<GPTConfig> configs = {test::tiny_config(), capped_config()};
    for (const GPTConfig& config : option_configs()) configs.push_back(config);
    return configs;
}

ModelRun make_run(const std::string& device, Precision precision, Recompute recompute = Recompute::none,
                  const GPTConfig& config = test::tiny_config()) {
    ModelRun run;
    run.backend = make_backend({device, 0, precision, 0});
    run.model = std::make_unique<GPT>(*run.backend, config, kBatch, kLength, recompute);
    const std::vector<float> values =
        test::spread_parameters(run.model->layout(), gpu_test::run_seed());
    run.model->load_master_parameters(values.data(), static_cast<int64_t>(values.size()));
    run.status_memory = run.backend->allocate(sizeof(StepStatus));
    StepStatus status;
    status.loss_scale = kLossScale;
    run.backend->copy_to_backend(run.status_memory.data(), &status, sizeof status);
    return run;
}

std::vector<double> widen(const std::vector<float>& values) { return {values.begin(), values.end()}; }

struct Batch {
    std::vector<int32_t> tokens, targets;
};

// Random tokens and targets; the tokens hold kSeparator at positions 0, 3 and 4 of each row (and
// wherever the draw puts it), so that the documents configs see documents of 1 to 4 tokens.
Batch random_batch(uint32_t seed) {
    const int vocabulary = test::tiny_config().vocab_size;
    Batch batch{test::random_tokens(kBatch * kLength, vocabulary, seed),
                test::random_tokens(kBatch * kLength, vocabulary, seed + 1)};
    for (int b = 0; b < kBatch; ++b)
        for (int t : {0, 3, 4}) batch.tokens[static_cast<size_t>(b * kLength + t)] = kSeparator;
    return batch;
}

class GpuModel : public ::testing::TestWithParam<Precision> {
protected:
    void SetUp() override {
        MIXGPT_GPU_OR_SKIP();
        trace_.emplace(__FILE__, __LINE__, gpu_test::seed_note());
    }
    std::optional<::testing::ScopedTrace> trace_;
};

TEST_P(GpuModel, ForwardAndBackwardMatchTheCpu) {
    const Precision precision = GetParam();
    const Batch batch = random_batch(gpu_test::run_seed());
    ModelRun reference_run = make_run("cpu", Precision::fp32);
    ModelRun cpu_run = make_run("cpu", precision);
    ModelRun gpu_run = make_run("cuda", precision);
    const auto pass = [&](ModelRun& run) {
        return test::training_pass(*run.model, batch.tokens, batch.targets, kBatch, kLength, run.status());
    };
    const test::PassResult reference = pass(reference_run), cpu = pass(cpu_run), gpu = pass(gpu_run);
    gpu_test::expect_matches_cpu(widen(gpu.losses), widen(cpu.losses), widen(reference.losses), DType::f32,
                                 precision, "losses");
    gpu_test::expect_matches_cpu(widen(gpu.gradients), widen(cpu.gradients), widen(reference.gradients),
                                 DType::f32, precision, "gradients");
}

// With the logit soft-cap and the z-loss (weight 0.05, large enough to move the gradients).
TEST_P(GpuModel, SoftcapAndZLossMatchTheCpu) {
    const Precision precision = GetParam();
    const Batch batch = random_batch(gpu_test::run_seed());
    ModelRun reference_run = make_run("cpu", Precision::fp32, Recompute::none, capped_config());
    ModelRun cpu_run = make_run("cpu", precision, Recompute::none, capped_config());
    ModelRun gpu_run = make_run("cuda", precision, Recompute::none, capped_config());
    const auto pass = [&](ModelRun& run) {
        run.model->set_z_loss(0.05f);
        return test::training_pass(*run.model, batch.tokens, batch.targets, kBatch, kLength, run.status());
    };
    const test::PassResult reference = pass(reference_run), cpu = pass(cpu_run), gpu = pass(gpu_run);
    gpu_test::expect_matches_cpu(widen(gpu.losses), widen(cpu.losses), widen(reference.losses), DType::f32,
                                 precision, "capped losses");
    gpu_test::expect_matches_cpu(widen(gpu.gradients), widen(cpu.gradients), widen(reference.gradients),
                                 DType::f32, precision, "gradients with soft-cap and z-loss");
    const auto z_terms = [](ModelRun& run) {
        return gpu_test::read_values(*run.backend, run.model->z_losses());
    };
    gpu_test::expect_matches_cpu(z_terms(gpu_run), z_terms(cpu_run), z_terms(reference_run), DType::f32,
                                 precision, "z-loss terms");
}

// Each option config's losses and gradients against the CPU's, by the same rule.
TEST_P(GpuModel, ModelOptionsMatchTheCpu) {
    const Precision precision = GetParam();
    const Batch batch = random_batch(gpu_test::run_seed());
    for (const GPTConfig& config : option_configs()) {
        SCOPED_TRACE(test::config_label(config));
        ModelRun reference_run = make_run("cpu", Precision::fp32, Recompute::none, config);
        ModelRun cpu_run = make_run("cpu", precision, Recompute::none, config);
        ModelRun gpu_run = make_run("cuda", precision, Recompute::none, config);
        const auto pass = [&](ModelRun& run) {
            return test::training_pass(*run.model, batch.tokens, batch.targets, kBatch, kLength, run.status());
        };
        const test::PassResult reference = pass(reference_run), cpu = pass(cpu_run), gpu = pass(gpu_run);
        gpu_test::expect_matches_cpu(widen(gpu.losses), widen(cpu.losses), widen(reference.losses), DType::f32,
                                     precision, "losses");
        gpu_test::expect_matches_cpu(widen(gpu.gradients), widen(cpu.gradients), widen(reference.gradients),
                                     DType::f32, precision, "gradients");
    }
}

// Recomputed activations are bit-identical to the stored ones (model/README.md), so the gradients
// do not depend on the recompute policy; this fails if a fused kernel and its recomputation round
// differently (as cuBLASLt's GELU epilogue would).
TEST_P(GpuModel, RecomputePoliciesGiveBitIdenticalGradients) {
    const Batch batch = random_batch(gpu_test::run_seed());
    std::vector<test::PassResult> results;
    for (Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full}) {
        ModelRun run = make_run("cuda", GetParam(), recompute);
        results.push_back(
            test::training_pass(*run.model, batch.tokens, batch.targets, kBatch, kLength, run.status()));
    }
    for (size_t i = 1; i < results.size(); ++i) {
        EXPECT_EQ(results[i].losses, results[0].losses) << recompute_name(static_cast<Recompute>(i));
        EXPECT_EQ(results[i].gradients, results[0].gradients) << recompute_name(static_cast<Recompute>(i));
    }
}

// Three training steps, twice from the same start: bit-identical losses, gradients and masters.
TEST_P(GpuModel, TwoIdenticalRunsAreBitIdentical) {
    struct Trace {
        std::vector<float> losses, gradients, masters;
    };
    const auto train = [&] {
        ModelRun run = make_run("cuda", GetParam());
        const int64_t n = run.model->layout().total();
        Buffer moments = run.backend->allocate(2 * static_cast<size_t>(n) * sizeof(float));
        const TensorView m(moments.as<float>(), DType::f32, {n}), v(moments.as<float>() + n, DType::f32, {n});
        AdamWHyper hyper;
        hyper.learning_rate = 1e-3f;
        LossScaleConfig config;
        config.dynamic = true;
        Trace trace;
        for (int step = 0; step < 3; ++step) {
            const Batch batch = random_batch(gpu_test::run_seed() + 10 * step);
            const test::PassResult result =
                test::training_pass(*run.model, batch.tokens, batch.targets, kBatch, kLength, run.status());
            trace.losses.insert(trace.losses.end(), result.losses.begin(), result.losses.end());
            trace.gradients = result.gradients;
            run.backend->grad_norm_squared(run.status(), run.model->gradients());
            run.backend->adamw_step(run.model->master_parameters(), run.model->gradients(), m, v,
                                    run.model->working_parameters(), run.model->layout().decay_count(), hyper,
                                    run.status());
            run.backend->update_loss_scale(run.status(), config);
        }
        trace.masters.resize(static_cast<size_t>(n));
        run.backend->copy_to_host(trace.masters.data(), run.model->master_parameters().data,
                                  trace.masters.size() * sizeof(float));
        return trace;
    };
    const Trace first = train(), second = train();
    const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
        return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    EXPECT_TRUE(same_bits(first.losses, second.losses));
    EXPECT_TRUE(same_bits(first.gradients, second.gradients));
    EXPECT_TRUE(same_bits(first.masters, second.masters));
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuModel,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         gpu_test::precision_test_name);

// fp32: the logits of one-position-at-a-time decoding equal the full forward's to 1e-5, plain,
// soft-capped (the classifier's capped logits against the logit_softcap op's) and under each model
// option (decoding_configs()).
class GpuModelDecoding : public ::testing::TestWithParam<size_t> {};

TEST_P(GpuModelDecoding, CachedDecodingGivesTheFullForwardLogits) {
    MIXGPT_GPU_OR_SKIP();
    SCOPED_TRACE(gpu_test::seed_note());
    ModelRun run = make_run("cuda", Precision::fp32, Recompute::none, decoding_configs()[GetParam()]);
    Backend& backend = *run.backend;
    const int64_t Vp = test::tiny_config().padded_vocab_size();
    const Batch batch = random_batch(gpu_test::run_seed());
    Buffer token_memory = backend.allocate(batch.tokens.size() * sizeof(int32_t));
    backend.copy_to_backend(token_memory.data(), batch.tokens.data(), batch.tokens.size() * sizeof(int32_t));
    const TensorView all_tokens(token_memory.data(), DType::i32, {kBatch, kLength});
    run.model->forward(all_tokens, all_tokens);
    const std::vector<double> full = gpu_test::read_values(backend, run.model->logits());  // (B, T, Vp)

    Buffer chunk_memory = backend.allocate(kBatch * sizeof(int32_t));
    for (int position = 0; position < kLength; ++position) {
        std::vector<int32_t> chunk;
        for (int b = 0; b < kBatch; ++b)
            chunk.push_back(batch.tokens[static_cast<size_t>(b * kLength + position)]);
        backend.copy_to_backend(chunk_memory.data(), chunk.data(), chunk.size() * sizeof(int32_t));
        const TensorView logits =
            run.model->forward_cached(TensorView(chunk_memory.data(), DType::i32, {kBatch, 1}), position);
        const std::vector<double> got = gpu_test::read_values(backend, logits);  // (B, Vp)
        std::vector<double> expected;
        for (int b = 0; b < kBatch; ++b) {
            const auto row = full.begin() + (int64_t{b} * kLength + position) * Vp;
            expected.insert(expected.end(), row, row + Vp);
        }
        EXPECT_LE(relative_norm_error(got, expected), 1e-5) << "position " << position;
    }
}

INSTANTIATE_TEST_SUITE_P(GpuModelOptions, GpuModelDecoding, ::testing::Range(size_t{0}, decoding_configs().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                             std::string label = test::config_label(decoding_configs()[info.param]);
                             std::replace(label.begin(), label.end(), ' ', '_');
                             return label;
                         });

}  // namespace
}  // namespace mixgpt
