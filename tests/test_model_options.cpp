// The model-shape options (model/model_options.h): the Llama family's defaults (Llama's SwiGLU
// width rule), settings refused for a family that does not read them, and the checkpoint refusing
// another family or setting on resume; the nanochat recipe.
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/checkpoint.h"
#include "model/model_options.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

using test::error_of;

ModelOptions llama(const char* preset) {
    ModelOptions options;
    options.preset = preset;
    options.arch = "llama";
    return options;
}

TEST(ModelOptionsTest, LlamaDefaultsFollowLlamasRules) {
    // F = 8/3 C rounded up to a multiple of 256 (of 64 under C = 512): d12 768 -> 2048, d6 384 -> 1024,
    // d2 128 -> 341 -> 384; with Llama 3's multiplier 1.3, d12: 2662 -> 2816.
    EXPECT_EQ(model_config(llama("d12"), 50257, 1024).mlp_hidden(), 2048);
    EXPECT_EQ(model_config(llama("d6"), 50257, 1024).mlp_hidden(), 1024);
    EXPECT_EQ(model_config(llama("d2"), 50257, 1024).mlp_hidden(), 384);
    ModelOptions scaled = llama("d12");
    scaled.ffn_multiplier = 1.3;
    EXPECT_EQ(model_config(scaled, 50257, 1024).mlp_hidden(), 2816);
    const GPTConfig config = model_config(llama("d6"), 300, 256);
    EXPECT_EQ(config.kv_heads(), 6);
    EXPECT_TRUE(config.tie_embeddings);
    EXPECT_FLOAT_EQ(config.norm_epsilon, 1e-5f);
    EXPECT_FLOAT_EQ(config.rope_theta, 10000.f);
    EXPECT_EQ(model_config(ModelOptions{}, 300, 256).mlp_hidden(), 4 * 384);  // gpt2 d6
}

TEST(ModelOptionsTest, BadSettingsAreRefusedNamingTheOption) {
    ModelOptions gpt2;
    gpt2.n_kv_head = 2;
    EXPECT_EQ(error_of([&] { model_config(gpt2, 300, 256); }), "n-kv-head: applies to --arch llama, not to --arch gpt2");
    gpt2 = ModelOptions{};
    gpt2.rope_theta = 500;
    EXPECT_EQ(error_of([&] { model_config(gpt2, 300, 256); }), "rope-theta: applies to --arch llama, not to --arch gpt2");
    ModelOptions options = llama("d6");
    options.n_kv_head = 4;
    EXPECT_EQ(error_of([&] { model_config(options, 300, 256); }), "n-kv-head: 4 does not divide the 6 heads");
    options = llama("d6");
    options.ffn_hidden = 1000;
    options.ffn_multiplier = 1.3;
    EXPECT_EQ(error_of([&] { model_config(options, 300, 256); }),
              "ffn-multiplier: give --ffn-hidden or --ffn-multiplier, not both");
    options = llama("d6");
    options.arch = "mamba";
    EXPECT_NE(error_of([&] { model_config(options, 300, 256); }).find("unknown architecture 'mamba'"),
              std::string::npos);
}

// --recipe nanochat is the Llama family with every recipe option, as README lists them; an option
// given beside it with a value wins; an unknown recipe is refused naming it; the recorded options
// are the expansion (a command rebuilt from them builds the same model).
TEST(ModelOptionsTest, NanochatRecipeSetsEveryOptionAndGivenValuesWin) {
    ModelOptions options;
    options.preset = "d2";
    options.recipe = "nanochat";
    const GPTConfig config = model_config(options, 300, 64);
    EXPECT_EQ(config.arch, Arch::llama);
    EXPECT_FALSE(config.tie_embeddings);
    EXPECT_EQ(config.mlp_kind(), MlpKind::relu2);
    EXPECT_EQ(config.mlp_hidden(), 4 * 128);
    EXPECT_FALSE(config.norm_weights);
    EXPECT_TRUE(config.embedding_norm);
    EXPECT_TRUE(config.qk_norm);
    EXPECT_FLOAT_EQ(config.logit_softcap, 15.f);
    EXPECT_EQ(config.zero_init_name(), "proj,head");
    EXPECT_EQ(config.init, InitScheme::fan_in);
    EXPECT_EQ(config.kv_heads(), config.n_head);

    options.logit_softcap = 30;
    options.zero_init = "none";
    options.mlp = "swiglu";
    const GPTConfig changed = model_config(options, 300, 64);
    EXPECT_FLOAT_EQ(changed.logit_softcap, 30.f);
    EXPECT_EQ(changed.zero_init_name(), "none");
    EXPECT_EQ(changed.mlp_kind(), MlpKind::swiglu);
    EXPECT_TRUE(changed.qk_norm);

    const auto described = describe_model_options(options);
    const auto value_of = [&](const std::string& name) {
        for (const auto& [key, value] : described)
            if (key == name) return value;
        return std::string("(absent)");
    };
    EXPECT_EQ(value_of("arch"), "llama");
    EXPECT_EQ(value_of("qk_norm"), "true");
    EXPECT_EQ(value_of("init"), "fan-in");
    EXPECT_EQ(value_of("recipe"), "(absent)");

    options.recipe = "speedrun";
    EXPECT_EQ(error_of([&] { model_config(options, 300, 64); }), "recipe: 'speedrun' is not one of nanochat");
    ModelOptions tied = llama("d2");
    tied.init = "fan-in";
    EXPECT_NE(error_of([&] { model_config(tied, 300, 64); }).find("init fan-in needs an output head of its own"),
              std::string::npos);
}

TEST(ModelOptionsTest, CheckpointsRefuseAnotherFamilyOrSetting) {
    Checkpoint checkpoint;
    checkpoint.config = model_config(llama("d2"), 300, 64);
    checkpoint.tokenizer_sha256 = "abc";
    GPTConfig run = checkpoint.config;
    EXPECT_NO_THROW(require_compatible(checkpoint, "c.h5", run, "abc"));
    run.arch = Arch::gpt2;
    run.n_kv_head = 0;
    run.ffn_hidden = 0;
    EXPECT_EQ(error_of([&] { require_compatible(checkpoint, "c.h5", run, "abc"); }),
              "c.h5: refusing checkpoint: arch is llama there, gpt2 in this run");
    run = checkpoint.config;
    run.rope_theta = 500.f;
    EXPECT_EQ(error_of([&] { require_compatible(checkpoint, "c.h5", run, "abc"); }),
              "c.h5: refusing checkpoint: rope_theta is 10000 there, 500 in this run");
    run = checkpoint.config;
    run.n_kv_head = 1;
    EXPECT_EQ(error_of([&] { require_compatible(checkpoint, "c.h5", run, "abc"); }),
              "c.h5: refusing checkpoint: n_kv_head is 2 there, 1 in this run");
}

}  // namespace
}  // namespace mixgpt
