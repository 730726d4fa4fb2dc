// Sampling: the filtered distributions against direct computation, the inverse-CDF draw, and
// generation with the KV cache against greedy decoding by full forward passes, seeds, stop
// token, rows and the context limit.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "eval/generate.h"
#include "model/token_batch.h"
#include "eval/token_choice.h"
#include "tests/test_train_support.h"

namespace mixgpt {
namespace {

using namespace testing_support;

std::vector<float> log_of(const std::vector<double>& probabilities) {
    std::vector<float> logits;
    for (double p : probabilities) logits.push_back(static_cast<float>(std::log(p)));
    return logits;
}

TEST(TokenChoiceTest, TemperatureReshapesTheSoftmax) {
    const std::vector<float> logits = {1.0f, -0.5f, 2.0f, 0.25f};
    for (float temperature : {0.5f, 1.0f, 2.0f}) {
        SamplingParams params;
        params.temperature = temperature;
        const std::vector<double> p = sampling_distribution(logits, params);
        long double total = 0;
        for (float l : logits) total += std::exp(static_cast<long double>(l) / temperature);
        for (size_t i = 0; i < logits.size(); ++i)
            EXPECT_NEAR(
                p[i],
                static_cast<double>(std::exp(static_cast<long double>(logits[i]) / temperature) / total),
                1e-15);
    }
    SamplingParams greedy;
    greedy.temperature = 0;
    EXPECT_EQ(sampling_distribution(logits, greedy), (std::vector<double>{0, 0, 1, 0}));
    EXPECT_EQ(choose_token({3.f, 5.f, 5.f}, greedy, 0.99), 1);  // ties: the lower id
}

TEST(TokenChoiceTest, TopKAndTopPKeepTheMostLikelyTokens) {
    const std::vector<float> logits = log_of({0.15, 0.5, 0.05, 0.3});
    SamplingParams top_k;
    top_k.top_k = 2;
    std::vector<double> p = sampling_distribution(logits, top_k);
    EXPECT_NEAR(p[1], 0.5 / 0.8, 1e-7);
    EXPECT_NEAR(p[3], 0.3 / 0.8, 1e-7);
    EXPECT_EQ(p[0], 0.0);
    EXPECT_EQ(p[2], 0.0);

    SamplingParams top_p;
    top_p.top_p = 0.9f;  // 0.5 + 0.3 = 0.8 < 0.9, so 0.15 joins: 0.95
    p = sampling_distribution(logits, top_p);
    EXPECT_NEAR(p[0], 0.15 / 0.95, 1e-7);
    EXPECT_NEAR(p[1], 0.5 / 0.95, 1e-7);
    EXPECT_NEAR(p[3], 0.3 / 0.95, 1e-7);
    EXPECT_EQ(p[2], 0.0);
    top_p.top_p = 0.4f;  // the most likely token alone reaches it
    p = sampling_distribution(logits, top_p);
    EXPECT_NEAR(p[1], 1.0, 1e-12);

    top_p.top_k = 1;
    top_p.top_p = 1.0f;
    EXPECT_NEAR(sampling_distribution(logits, top_p)[1], 1.0, 1e-12);
}

TEST(TokenChoiceTest, DrawsByTheCumulativeDistributionInTokenOrder) {
    const std::vector<float> logits = log_of({0.25, 0.5, 0.25});
    const SamplingParams params;
    EXPECT_EQ(choose_token(logits, params, 0.0), 0);
    EXPECT_EQ(choose_token(logits, params, 0.2499), 0);
    EXPECT_EQ(choose_token(logits, params, 0.2501), 1);
    EXPECT_EQ(choose_token(logits, params, 0.7499), 1);
    EXPECT_EQ(choose_token(logits, params, 0.7501), 2);
    EXPECT_EQ(choose_token(logits, params, 0.9999999), 2);
    SamplingParams bad;
    bad.top_p = 0;
    EXPECT_THROW(choose_token(logits, bad, 0.5), Error);
}

class GenerateTest : public ::testing::Test {
protected:
    void SetUp() override {
        backend_ = cpu_backend(Precision::fp32);
        model_ = std::make_unique<GPT>(*backend_, tiny_config(), 3, 16, Recompute::none);
        load_initial_parameters(*model_, 17);
    }

    // Greedy continuation by full forward passes over the whole sequence, no cache.
    std::vector<int32_t> greedy_without_cache(std::vector<int32_t> sequence, int count) {
        GPT full(*backend_, tiny_config(), 1, 16, Recompute::none);
        load_initial_parameters(full, 17);
        const int padded = tiny_config().padded_vocab_size();
        std::vector<int32_t> produced;
        for (int i = 0; i < count; ++i) {
            const int64_t length = static_cast<int64_t>(sequence.size());
            TokenBatch batch(*backend_, 1, static_cast<int>(length));
            std::vector<int32_t> window = sequence;
            window.push_back(0);  // targets are not looked at
            batch.upload(window.data());
            full.forward(batch.inputs(), batch.targets());
            const std::vector<float> logits = read_floats(*backend_, full.logits());  // (1, length, Vp)
            const float* last = logits.data() + (length - 1) * padded;
            const int32_t best =
                static_cast<int32_t>(std::max_element(last, last + tiny_config().vocab_size) - last);
            produced.push_back(best);
            sequence.push_back(best);
        }
        return produced;
    }

    std::unique_ptr<Backend> backend_;
    std::unique_ptr<GPT> model_;
};

TEST_F(GenerateTest, GreedyWithTheCacheEqualsGreedyByFullForwardPasses) {
    const std::vector<int32_t> prompt = {5, 17, 42, 8};
    GenerationOptions options;
    options.max_new_tokens = 10;
    options.sampling.temperature = 0;
    const std::vector<std::vector<int32_t>> rows = generate(*model_, prompt, 2, options);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0], greedy_without_cache(prompt, 10));
    EXPECT_EQ(rows[1], rows[0]);
}

TEST_F(GenerateTest, SeedsStopTokenAndContextLimit) {
    const std::vector<int32_t> prompt = {1, 2, 3};
    GenerationOptions options;
    options.max_new_tokens = 8;
    options.seed = 99;
    const auto first = generate(*model_, prompt, 3, options);
    EXPECT_EQ(generate(*model_, prompt, 3, options), first);
    EXPECT_NE(first[0], first[1]);  // rows draw independently
    options.seed = 100;
    EXPECT_NE(generate(*model_, prompt, 3, options), first);

    options.seed = 99;
    EXPECT_EQ(generate(*model_, prompt, 1, options)[0], first[0]);  // a row's draws do not depend on the rows
    const auto stop_at = std::find(first[0].begin(), first[0].end(), first[0][2]);
    options.stop_token = *stop_at;
    const auto stopped = generate(*model_, prompt, 1, options);
    EXPECT_EQ(stopped[0], std::vector<int32_t>(first[0].begin(), stop_at + 1));  // the stop token is kept

    // Context 16: a prompt of 10 leaves room to feed 6 new tokens; the 7th is predicted last.
    options.stop_token = -1;
    options.max_new_tokens = 100;
    EXPECT_EQ(generate(*model_, std::vector<int32_t>(10, 4), 1, options)[0].size(), 7u);
    EXPECT_THROW(generate(*model_, std::vector<int32_t>(16, 4), 1, options), Error);
    EXPECT_THROW(generate(*model_, prompt, 4, options), Error);  // more rows than the batch
}

}  // namespace
}  // namespace mixgpt
