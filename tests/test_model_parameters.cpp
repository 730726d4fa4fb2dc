// ParameterLayout (names, order, decay range), GPT-2's initialization and nanochat's fan-in one.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "model/parameters.h"

namespace mixgpt {
namespace {

GPTConfig small_config() {
    GPTConfig config;
    config.n_layer = 3;
    config.n_head = 2;
    config.n_embd = 32;
    config.vocab_size = 200;
    config.max_seq_len = 64;
    return config;
}

TEST(ModelParameters, LayoutIsContiguousWithDecayedMatricesFirst) {
    const GPTConfig config = small_config();
    const ParameterLayout layout(config);
    int64_t offset = 0;
    bool in_decay = true;
    for (const ParameterView& view : layout.views()) {
        EXPECT_EQ(view.offset, offset) << view.name;
        EXPECT_EQ(view.decay, view.shape.size() == 2) << view.name;
        if (!view.decay) in_decay = false;
        EXPECT_TRUE(view.decay == in_decay) << view.name << " breaks the decay range";
        offset += view.numel;
        if (view.decay) {
            EXPECT_LE(offset, layout.decay_count());
        }
    }
    EXPECT_EQ(offset, layout.total());
    EXPECT_EQ(layout.views().size(), static_cast<size_t>(2 + 12 * config.n_layer + 2));
    const int64_t padding = int64_t{config.padded_vocab_size() - config.vocab_size} * config.n_embd;
    EXPECT_EQ(layout.total(), config.num_parameters() + padding);
}

TEST(ModelParameters, NamesAndShapesFollowGpt2) {
    const ParameterLayout layout(small_config());
    EXPECT_EQ(layout.find("wte").shape, (std::vector<int64_t>{256, 32}));
    EXPECT_EQ(layout.find("wpe").shape, (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(layout.find("h.2.attn.c_attn.weight").shape, (std::vector<int64_t>{96, 32}));
    EXPECT_EQ(layout.find("h.0.mlp.c_proj.weight").shape, (std::vector<int64_t>{32, 128}));
    EXPECT_EQ(layout.find("h.1.mlp.c_fc.bias").shape, (std::vector<int64_t>{128}));
    EXPECT_EQ(layout.find("ln_f.bias").shape, (std::vector<int64_t>{32}));
    EXPECT_THROW(layout.find("h.3.ln_1.weight"), Error);
}

// --zero-init (issue 38): the residual projections (attention and MLP outputs) and the untied output
// head start at zero, each alone or both; every other tensor keeps the values it has without it
// (each tensor draws from its own stream).
TEST(ModelParameters, ZeroInitZeroesTheProjectionsAndTheHead) {
    GPTConfig config = small_config();
    config.arch = Arch::llama;
    config.tie_embeddings = false;
    const ParameterLayout layout(config);
    const std::vector<float> plain = init_parameters(config, layout, 5);
    for (const auto& [projections, head] :
         {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
        GPTConfig zeroed = config;
        zeroed.zero_init_projections = projections;
        zeroed.zero_init_head = head;
        SCOPED_TRACE(zeroed.zero_init_name());
        const std::vector<float> values = init_parameters(zeroed, layout, 5);
        for (const ParameterView& view : layout.views()) {
            const bool zero = (projections && (view.role == Role::attention_output_weight ||
                                               view.role == Role::mlp_output_weight)) ||
                              (head && view.role == Role::output_head);
            const auto begin = values.begin() + view.offset, end = begin + view.numel;
            if (zero) {
                EXPECT_TRUE(std::all_of(begin, end, [](float v) { return v == 0.f; })) << view.name;
            } else {
                EXPECT_TRUE(std::equal(begin, end, plain.begin() + view.offset)) << view.name;
            }
            // Without zero-init every matrix has non-zero values (the test can fail).
            if (view.shape.size() == 2) {
                EXPECT_TRUE(std::any_of(plain.begin() + view.offset, plain.begin() + view.offset + view.numel,
                                        [](float v) { return v != 0.f; }))
                    << view.name;
            }
        }
    }
    GPTConfig tied = config;
    tied.tie_embeddings = true;
    tied.zero_init_head = true;
    EXPECT_THROW(tied.validate(), Error);
}

TEST(ModelParameters, InitializationFollowsGpt2) {
    const GPTConfig config = small_config();
    const ParameterLayout layout(config);
    const std::vector<float> values = init_parameters(config, layout, 1234);
    auto statistics = [&](const std::string& name, int64_t count) {
        const ParameterView& view = layout.find(name);
        double sum = 0.0, squares = 0.0;
        for (int64_t i = 0; i < count; ++i) {
            sum += values[static_cast<size_t>(view.offset + i)];
            squares +=
                values[static_cast<size_t>(view.offset + i)] * values[static_cast<size_t>(view.offset + i)];
        }
        return std::make_pair(sum / count, std::sqrt(squares / count));
    };
    // Sample standard deviations of n normal values are within 5 / sqrt(2n) (relative) of the truth.
    const ParameterView& wte = layout.find("wte");
    const int64_t real = int64_t{config.vocab_size} * config.n_embd;
    const auto [wte_mean, wte_std] = statistics("wte", real);
    EXPECT_NEAR(wte_std, 0.02, 0.02 * 5 / std::sqrt(2.0 * real));
    EXPECT_NEAR(wte_mean, 0.0, 0.02 * 5 / std::sqrt(real));
    for (int64_t i = real; i < wte.numel; ++i) ASSERT_EQ(values[static_cast<size_t>(wte.offset + i)], 0.f);
    const int64_t projection = layout.find("h.1.mlp.c_proj.weight").numel;
    const double residual_std = 0.02 / std::sqrt(2.0 * config.n_layer);
    EXPECT_NEAR(statistics("h.1.mlp.c_proj.weight", projection).second, residual_std,
                residual_std * 5 / std::sqrt(2.0 * projection));
    EXPECT_EQ(statistics("h.0.ln_1.weight", 32), std::make_pair(1.0, 1.0));
    EXPECT_EQ(statistics("h.0.attn.c_attn.bias", 96), std::make_pair(0.0, 0.0));
    EXPECT_EQ(statistics("ln_f.weight", 32).first, 1.0);
}

// --init fan-in (nanochat's): each weight matrix (out, in) N(0, 1/in · min(1, out/in)), the packed
// q, k and v rows and SwiGLU's gate and up rows as the separate matrices they are; the token
// embedding N(0, 1); norms, zero-init and the padding rows as under gpt2. The expected deviations
// are written out from the rule for this shape (C = 64, H = 4, Hkv = 2, hd = 16).
TEST(ModelParameters, FanInInitializationFollowsNanochat) {
    GPTConfig config = small_config();
    config.arch = Arch::llama;
    config.n_embd = 64;
    config.n_head = 4;
    config.n_kv_head = 2;
    config.ffn_hidden = 96;
    config.tie_embeddings = false;
    config.init = InitScheme::fan_in;
    config.validate();
    const ParameterLayout layout(config);
    const std::vector<float> values = init_parameters(config, layout, 77);
    // The sample deviation of rows [first, first + rows) of a tensor, within 5 / sqrt(2n) of the truth.
    const auto expect_std = [&](const std::string& name, int64_t first, int64_t rows, double expected) {
        const ParameterView& view = layout.find(name);
        const int64_t columns = view.numel / view.shape[0], n = rows * columns;
        double squares = 0.0;
        for (int64_t i = first * columns; i < (first + rows) * columns; ++i)
            squares += std::pow(values[static_cast<size_t>(view.offset + i)], 2);
        EXPECT_NEAR(std::sqrt(squares / n), expected, expected * 5 / std::sqrt(2.0 * n)) << name << " rows " << first;
    };
    const double C = 64;
    expect_std("token_embedding", 0, config.vocab_size, 1.0);
    expect_std("blocks.1.attention.qkv.weight", 0, 64, 1 / std::sqrt(C));                      // q: 64 x 64
    expect_std("blocks.1.attention.qkv.weight", 64, 32, 1 / std::sqrt(C) * std::sqrt(32 / C));  // k: 32 x 64
    expect_std("blocks.1.attention.qkv.weight", 96, 32, 1 / std::sqrt(C) * std::sqrt(32 / C));  // v: 32 x 64
    expect_std("blocks.0.attention.output.weight", 0, 64, 1 / std::sqrt(C));                    // 64 x 64
    expect_std("blocks.0.mlp.gate_up.weight", 0, 96, 1 / std::sqrt(C));                         // gate: 96 x 64
    expect_std("blocks.0.mlp.gate_up.weight", 96, 96, 1 / std::sqrt(C));                        // up: 96 x 64
    expect_std("blocks.2.mlp.down.weight", 0, 64, 1 / std::sqrt(96.0) * std::sqrt(C / 96));     // 64 x 96
    expect_std("output_head", 0, config.vocab_size, 1 / std::sqrt(C));                          // 200 x 64
    const ParameterView& head = layout.find("output_head");
    for (int64_t i = int64_t{config.vocab_size} * 64; i < head.numel; ++i)
        ASSERT_EQ(values[static_cast<size_t>(head.offset + i)], 0.f);
    EXPECT_EQ(values[static_cast<size_t>(layout.find("final_norm.weight").offset)], 1.f);

    GPTConfig tied = config;
    tied.tie_embeddings = true;
    EXPECT_THROW(tied.validate(), Error);
}

TEST(ModelParameters, InitializationDependsOnSeedOnlyNotThreads) {
    const GPTConfig config = small_config();
    const ParameterLayout layout(config);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const std::vector<float> single = init_parameters(config, layout, 99);
    omp_set_num_threads(3);
    const std::vector<float> three = init_parameters(config, layout, 99);
    omp_set_num_threads(threads);
    EXPECT_EQ(single, three);
    EXPECT_NE(single, init_parameters(config, layout, 100));
}

}  // namespace
}  // namespace mixgpt
