// The Llama-style family (model/family_llama.cpp) against the float64 whole-model reference
// (tests/reference_f64_gpt.h), at GPT-2's tolerances (tests/test_torch_reference.cpp): the fp32
// CPU model's mean loss within 1e-6 relative, its per-position losses and every gradient tensor
// within 1e-5 relative norm error, the vocabulary padding rows' gradients exactly zero. The
// reference's own backward is first checked against PyTorch's float64 gradients of GPT-2 (the
// committed fixtures), so that both families' reference shares a checked backward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "core/h5.h"
#include "core/log.h"
#include "tests/reference_f64_gpt.h"
#include "tests/test_cpu_support.h"
#include "tests/test_model_support.h"

namespace mixgpt {
namespace {

constexpr int kBatch = 2, kLength = 16;

std::string fixture_path(const char* file) {
    const char* directory = std::getenv("MIXGPT_FIXTURES");
    return std::string(directory != nullptr ? directory : "tests/fixtures") + "/" + file;
}

std::vector<double> read_doubles(const h5::File& file, const std::string& name, int64_t count) {
    std::vector<double> values(static_cast<size_t>(count));
    file.read(name, h5::Type::f64, values.data(), count);
    return values;
}

void random_tokens(std::vector<int32_t>& tokens, std::vector<int32_t>& targets, int vocab_size, uint32_t seed) {
    std::mt19937 generator(seed);
    std::uniform_int_distribution<int32_t> token(0, vocab_size - 1);
    tokens.resize(kBatch * kLength);
    targets.resize(kBatch * kLength);
    for (auto& value : tokens) value = token(generator);
    for (auto& value : targets) value = token(generator);
}

TEST(LlamaReference, F64BackwardMatchesPyTorchOnGpt2) {
    const std::string input_path = fixture_path("torch_reference_input.h5");
    const std::string output_path = fixture_path("torch_reference_output.h5");
    const h5::File input = h5::File::open_read(input_path);
    const h5::File reference = h5::File::open_read(output_path);
    GPTConfig config;  // tests/test_torch_reference.cpp's fixture shape
    config.n_layer = 2;
    config.n_head = 4;
    config.n_embd = 64;
    config.vocab_size = 250;
    config.max_seq_len = 32;
    ASSERT_EQ(input.attribute_int("/", "n_embd"), config.n_embd);
    const ParameterLayout layout(config);
    std::vector<float> values(static_cast<size_t>(layout.total()));
    for (const ParameterView& view : layout.views())
        input.read("parameters/" + view.name, h5::Type::f32, values.data() + view.offset,
                   view.numel / view.shape[0] * view.real_rows);
    std::vector<int32_t> tokens(kBatch * kLength), targets(kBatch * kLength);
    input.read("tokens", h5::Type::i32, tokens.data(), kBatch * kLength);
    input.read("targets", h5::Type::i32, targets.data(), kBatch * kLength);

    const F64Gpt::Pass pass = F64Gpt(config, values).forward_backward(tokens, targets, kBatch, kLength);
    EXPECT_LE(relative_norm_error(pass.losses, read_doubles(reference, "losses", kBatch * kLength)), 1e-12);
    for (const ParameterView& view : layout.views()) {
        const int64_t count = view.numel / view.shape[0] * view.real_rows;
        const auto begin = pass.gradients.begin() + view.offset;
        EXPECT_LE(relative_norm_error(std::vector<double>(begin, begin + count),
                                      read_doubles(reference, "gradients/" + view.name, count)),
                  1e-10)
            << view.name;
    }
}

struct LlamaCase {
    const char* name;
    int n_kv_head;
    bool tie_embeddings;
    float rope_theta;
};

void PrintTo(const LlamaCase& c, std::ostream* out) { *out << c.name; }

class LlamaParity : public ::testing::TestWithParam<LlamaCase> {};

// 2 layers, width 32, 4 query heads of 8, SwiGLU F = 48, vocabulary 200 (padded 256), context 16.
GPTConfig llama_config(const LlamaCase& c) {
    GPTConfig config = GPTConfig::preset("d2", 200, kLength, Arch::llama);
    config.n_head = 4;
    config.n_embd = 32;
    config.n_kv_head = c.n_kv_head;
    config.ffn_hidden = 48;
    config.norm_epsilon = 1e-5f;
    config.rope_theta = c.rope_theta;
    config.tie_embeddings = c.tie_embeddings;
    config.validate();
    return config;
}

TEST_P(LlamaParity, Fp32CpuLossAndGradientsMatchFloat64) {
    const GPTConfig config = llama_config(GetParam());
    auto backend = make_backend({"cpu", 0, Precision::fp32, 1});
    GPT model(*backend, config, kBatch, kLength, Recompute::none);
    const ParameterLayout& layout = model.layout();
    const std::vector<float> values = test::spread_parameters(layout, 7);
    model.load_master_parameters(values.data(), layout.total());
    std::vector<int32_t> tokens, targets;
    random_tokens(tokens, targets, config.vocab_size, 11);

    const test::PassResult result = test::training_pass(model, tokens, targets, kBatch, kLength);
    const F64Gpt::Pass reference = F64Gpt(config, values).forward_backward(tokens, targets, kBatch, kLength);

    double loss = 0, reference_loss = 0;
    for (size_t i = 0; i < result.losses.size(); ++i) {
        loss += result.losses[i];
        reference_loss += reference.losses[i];
    }
    EXPECT_LE(std::abs(loss - reference_loss) / reference_loss, 1e-6) << loss << " vs " << reference_loss;
    EXPECT_LE(relative_norm_error(std::vector<double>(result.losses.begin(), result.losses.end()), reference.losses),
              test::kFp32Tolerance);
    double worst = 0;
    for (const auto& [name, error] : test::gradient_errors_per_tensor(layout, result.gradients, reference.gradients)) {
        EXPECT_LE(error, test::kFp32Tolerance) << name;
        worst = std::max(worst, error);
    }
    RecordProperty("worst_gradient_relative_norm_error", format("%.3g", worst));
}

INSTANTIATE_TEST_SUITE_P(Families, LlamaParity,
                         ::testing::Values(LlamaCase{"gqa_untied", 2, false, 10000.f},
                                           LlamaCase{"mqa_tied", 1, true, 500.f},
                                           LlamaCase{"mha_untied", 4, false, 10000.f}),
                         [](const ::testing::TestParamInfo<LlamaCase>& info) { return info.param.name; });

}  // namespace
}  // namespace mixgpt
