// GPTConfig: presets, validation, parameter counts; recompute names.
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/config.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

TEST(ModelConfig, PresetsScaleWidthAndHeadsWithDepth) {
    for (int depth : {2, 6, 12, 24, 36, 48}) {
        const GPTConfig config = GPTConfig::preset("d" + std::to_string(depth), 50257, 1024);
        EXPECT_EQ(config.n_layer, depth);
        EXPECT_EQ(config.n_head, depth);
        EXPECT_EQ(config.n_embd, 64 * depth);
        EXPECT_EQ(config.head_dim(), 64);
        EXPECT_NO_THROW(config.validate());
    }
    EXPECT_THROW(GPTConfig::preset("d7", 256, 64), Error);
}

// GPT-2 small (d12, vocabulary 50257, context 1024) has 124,439,808 parameters, the figure
// published with the model (and reported by Hugging Face's GPT2LMHeadModel.num_parameters()).
TEST(ModelConfig, D12CountsLikeGpt2Small) {
    EXPECT_EQ(GPTConfig::preset("d12", 50257, 1024).num_parameters(), 124439808);
}

TEST(ModelConfig, VocabularyPadsToMultipleOf128) {
    GPTConfig config;
    config.vocab_size = 50257;
    EXPECT_EQ(config.padded_vocab_size(), 50304);
    config.vocab_size = 256;
    EXPECT_EQ(config.padded_vocab_size(), 256);
    config.vocab_size = 1;
    EXPECT_EQ(config.padded_vocab_size(), 128);
}

TEST(ModelConfig, ValidateNamesTheBadField) {
    auto message_of = [](const GPTConfig& config) { return test::error_of([&] { config.validate(); }); };
    GPTConfig config;
    config.n_embd = 100;
    config.n_head = 3;
    EXPECT_NE(message_of(config).find("n_head"), std::string::npos);
    config = GPTConfig();
    config.max_seq_len = 0;
    EXPECT_NE(message_of(config).find("max_seq_len"), std::string::npos);
    config = GPTConfig();
    config.vocab_size = -5;
    EXPECT_NE(message_of(config).find("vocab_size"), std::string::npos);
}

// Both family descriptions pass check_family (model/family.h): among others, every family reads the
// settings of issue 38's options (else its checkpoints would not record them), and the norm
// tensors carry the presence that --norm-weights and --embedding-norm switch.
TEST(ModelConfig, FamilyDescriptionsAreConsistent) {
    for (Arch arch : {Arch::gpt2, Arch::llama})
        EXPECT_NO_THROW(check_family(family_of(arch))) << arch_name(arch);
    Family missing = gpt2_family();
    missing.settings.pop_back();
    EXPECT_THROW(check_family(missing), Error);
}

TEST(ModelConfig, RecomputeNamesRoundTrip) {
    for (Recompute policy : {Recompute::none, Recompute::selective, Recompute::full})
        EXPECT_EQ(parse_recompute(recompute_name(policy)), policy);
    EXPECT_THROW(parse_recompute("some"), Error);
}

}  // namespace
}  // namespace mixgpt
