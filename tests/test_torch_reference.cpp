// The FP32 CPU GPT against PyTorch in float64 (scripts/torch_reference.py), on the
// committed fixtures in tests/fixtures/ (regenerate with scripts/make_fixtures.sh):
//   torch_reference_input.h5   config, weights by GPT-2 name, tokens, targets (written below)
//   torch_reference_output.h5  loss, per-token losses, logits and every gradient in float64
// The criteria are issue 4's: loss within 1e-6 relative, logits and each gradient tensor
// within 1e-5 relative norm error; wte's padding rows get exactly zero gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/atomic_file.h"
#include "core/h5.h"
#include "core/log.h"
#include "tests/test_cpu_support.h"
#include "tests/test_model_support.h"

namespace mixgpt {
namespace {

constexpr int kBatch = 2, kLength = 16;

// 2 layers, width 64, 4 heads; vocabulary 250 padded to 256, so the padding is exercised too.
GPTConfig fixture_config() {
    GPTConfig config;
    config.n_layer = 2;
    config.n_head = 4;
    config.n_embd = 64;
    config.vocab_size = 250;
    config.max_seq_len = 32;
    return config;
}

std::string fixture_path(const char* file) {
    const char* directory = std::getenv("MIXGPT_FIXTURES");
    return std::string(directory != nullptr ? directory : "tests/fixtures") + "/" + file;
}

// Values of a parameter as stored for PyTorch: wte without its padding rows.
int64_t exported_rows(const ParameterView& view, const GPTConfig& config) {
    return view.name == "wte" ? config.vocab_size : view.shape[0];
}

// Writes the input of scripts/torch_reference.py. Run by scripts/make_fixtures.sh
// (--gtest_also_run_disabled_tests); not part of the suite.
TEST(TorchReference, DISABLED_WriteInput) {
    const GPTConfig config = fixture_config();
    const ParameterLayout layout(config);
    const std::vector<float> values = test::spread_parameters(layout, 2024);
    const std::vector<int32_t> tokens = test::random_tokens(kBatch * kLength, config.vocab_size, 1);
    const std::vector<int32_t> targets = test::random_tokens(kBatch * kLength, config.vocab_size, 2);
    const std::string path = fixture_path("torch_reference_input.h5");
    AtomicOutput output(path);
    {
        h5::File file = h5::File::create(output.temporary_path());
        file.set_attribute("/", "n_layer", int64_t{config.n_layer});
        file.set_attribute("/", "n_head", int64_t{config.n_head});
        file.set_attribute("/", "n_embd", int64_t{config.n_embd});
        file.set_attribute("/", "vocab_size", int64_t{config.vocab_size});
        file.set_attribute("/", "max_seq_len", int64_t{config.max_seq_len});
        file.create_group("parameters");
        for (const ParameterView& view : layout.views()) {
            std::vector<int64_t> shape = view.shape;
            shape[0] = exported_rows(view, config);
            file.write("parameters/" + view.name, h5::Type::f32, values.data() + view.offset, shape);
        }
        file.write("tokens", h5::Type::i32, tokens.data(), {kBatch, kLength});
        file.write("targets", h5::Type::i32, targets.data(), {kBatch, kLength});
    }
    output.commit();
}

std::vector<double> read_doubles(const h5::File& file, const std::string& name, int64_t count) {
    std::vector<double> values(static_cast<size_t>(count));
    file.read(name, h5::Type::f64, values.data(), count);
    return values;
}

TEST(TorchReference, Fp32CpuMatchesPyTorchFloat64) {
    const GPTConfig config = fixture_config();
    const std::string input_path = fixture_path("torch_reference_input.h5");
    const std::string output_path = fixture_path("torch_reference_output.h5");
    ASSERT_TRUE(file_exists(input_path) && file_exists(output_path))
        << "missing " << input_path << " or " << output_path << " (run scripts/make_fixtures.sh)";
    const h5::File input = h5::File::open_read(input_path);
    const h5::File reference = h5::File::open_read(output_path);
    ASSERT_EQ(input.attribute_int("/", "n_embd"), config.n_embd);
    ASSERT_EQ(input.attribute_int("/", "vocab_size"), config.vocab_size);

    auto backend = make_backend({"cpu", 0, Precision::fp32, 0});
    GPT model(*backend, config, kBatch, kLength, Recompute::none);
    const ParameterLayout& layout = model.layout();
    std::vector<float> values(static_cast<size_t>(layout.total()));
    for (const ParameterView& view : layout.views())
        input.read("parameters/" + view.name, h5::Type::f32, values.data() + view.offset,
                   view.numel / view.shape[0] * exported_rows(view, config));
    model.load_master_parameters(values.data(), layout.total());
    std::vector<int32_t> tokens(kBatch * kLength), targets(kBatch * kLength);
    input.read("tokens", h5::Type::i32, tokens.data(), kBatch * kLength);
    input.read("targets", h5::Type::i32, targets.data(), kBatch * kLength);

    const test::PassResult result = test::training_pass(model, tokens, targets, kBatch, kLength);
    const int64_t N = kBatch * kLength, V = config.vocab_size, Vp = config.padded_vocab_size();

    double loss = 0.0;
    for (float l : result.losses) loss += l;
    loss /= static_cast<double>(N);
    const double reference_loss = read_doubles(reference, "loss", 1)[0];
    const double loss_error = std::abs(loss - reference_loss) / reference_loss;
    EXPECT_LE(loss_error, 1e-6) << loss << " vs " << reference_loss;
    RecordProperty("loss_relative_error", format("%.3g", loss_error));
    const std::vector<double> losses(result.losses.begin(), result.losses.end());
    EXPECT_LE(relative_norm_error(losses, read_doubles(reference, "losses", N)), test::kFp32Tolerance);

    // Logits from a forward pass (forward_backward leaves gradients in their place).
    const test::IntTensor token_tensor(tokens, {kBatch, kLength}), target_tensor(targets, {kBatch, kLength});
    model.forward(token_tensor.view(), target_tensor.view());
    const float* logits = model.logits().as<const float>();
    std::vector<double> real_logits;
    for (int64_t i = 0; i < N; ++i)
        real_logits.insert(real_logits.end(), logits + i * Vp, logits + i * Vp + V);
    const double logits_error = relative_norm_error(real_logits, read_doubles(reference, "logits", N * V));
    EXPECT_LE(logits_error, test::kFp32Tolerance);
    RecordProperty("logits_relative_norm_error", format("%.3g", logits_error));

    double worst_gradient_error = 0.0;
    for (const ParameterView& view : layout.views()) {
        const int64_t count = view.numel / view.shape[0] * exported_rows(view, config);
        const float* gradient = result.gradients.data() + view.offset;
        const std::vector<double> got(gradient, gradient + count);
        const double error =
            relative_norm_error(got, read_doubles(reference, "gradients/" + view.name, count));
        EXPECT_LE(error, test::kFp32Tolerance) << view.name;
        worst_gradient_error = std::max(worst_gradient_error, error);
        for (int64_t i = count; i < view.numel; ++i) ASSERT_EQ(gradient[i], 0.f) << view.name << " padding";
    }
    RecordProperty("worst_gradient_relative_norm_error", format("%.3g", worst_gradient_error));
}

}  // namespace
}  // namespace mixgpt
