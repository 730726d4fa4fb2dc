// The model-shape options (model/model_options.h): the Llama family's defaults (Llama's SwiGLU
// width rule), settings refused for a family that does not read them, and the checkpoint refusing
// another family or setting on resume.
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
