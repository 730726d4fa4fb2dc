// Train options: the total batch -> accumulation steps rule with its error message, the step count
// from a token budget, and option validation naming the option.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "tests/test_support.h"
#include "train/train_options.h"

namespace mixgpt {
namespace {

using test::error_of;

TEST(TrainOptionsTest, TotalBatchGivesTheAccumulationSteps) {
    EXPECT_EQ(accumulation_steps_for(0, 4, 64, 1), 1);
    EXPECT_EQ(accumulation_steps_for(4 * 64, 4, 64, 1), 1);
    EXPECT_EQ(accumulation_steps_for(4 * 64 * 8, 4, 64, 1), 8);
    EXPECT_EQ(accumulation_steps_for(4 * 64 * 8, 4, 64, 2), 4);
}

TEST(TrainOptionsTest, IndivisibleTotalBatchListsTheValuesThatWork) {
    // 1000 is not a multiple of 4*64 = 256, nor of T = 64: only the nearby totals work.
    const std::string message = error_of([] { accumulation_steps_for(1000, 4, 64, 1); });
    EXPECT_NE(message.find("total-batch-tokens: 1000 is not a multiple of B*T*ranks = 4*64*1 = 256"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("totals that work: 768, 1024"), std::string::npos) << message;
    // 6*64 = 384 is a multiple of T but not of 4*64: batch sizes dividing 6 sequences also work.
    const std::string sizes = error_of([] { accumulation_steps_for(384, 4, 64, 1); });
    EXPECT_NE(sizes.find("totals that work: 256, 512"), std::string::npos) << sizes;
    EXPECT_NE(sizes.find("or keep it with batch-size 1, 2, 3, 6"), std::string::npos) << sizes;
    const std::string small = error_of([] { accumulation_steps_for(100, 4, 64, 1); });
    EXPECT_NE(small.find("less than one micro-batch"), std::string::npos) << small;
}

TEST(TrainOptionsTest, PlanDerivesStepsScheduleAndLossScaling) {
    TrainOptions options;
    options.batch_size = 2;
    options.seq_len = 32;
    options.total_batch_tokens = 2 * 32 * 4;
    options.token_budget = 10'000;
    options.warmup_steps = 3;
    options.precision = Precision::fp16;
    const TrainPlan plan = plan_training(options, 300, 1);
    EXPECT_EQ(plan.accumulation_steps, 4);
    EXPECT_EQ(plan.tokens_per_step, 256);
    EXPECT_EQ(plan.total_steps, 40);  // ceil(10000 / 256)
    EXPECT_EQ(plan.schedule.total_steps, 40);
    EXPECT_EQ(plan.model.n_layer, 6);  // the d6 preset
    EXPECT_EQ(plan.model.vocab_size, 300);
    EXPECT_EQ(plan.model.max_seq_len, 32);
    EXPECT_EQ(plan.loss_scale.mode, LossScaleMode::dynamic);
}

TEST(TrainOptionsTest, BadOptionsNameTheOption) {
    const auto message_for = [](const std::function<void(TrainOptions&)>& change) {
        TrainOptions options;
        options.steps = 10;
        change(options);
        return error_of([&] { plan_training(options, 300, 1); });
    };
    EXPECT_NE(
        message_for([](TrainOptions& o) { o.token_budget = 5; }).find("exactly one of --steps and --tokens"),
        std::string::npos);
    EXPECT_EQ(message_for([](TrainOptions& o) { o.steps = 0; }),
              "steps, tokens: give --steps N or --tokens N with N >= 1 (0 trains nothing)");
    EXPECT_EQ(message_for([](TrainOptions& o) { o.batch_size = 0; }).rfind("batch-size:", 0), 0u);
    EXPECT_EQ(message_for([](TrainOptions& o) { o.beta2 = 1.0; }).rfind("beta2:", 0), 0u);
    EXPECT_EQ(message_for([](TrainOptions& o) { o.warmup_steps = 11; }).rfind("warmup-steps:", 0), 0u);
    EXPECT_EQ(message_for([](TrainOptions& o) { o.loss_scale = "static:-1"; }).rfind("loss-scale:", 0), 0u);
    EXPECT_EQ(
        message_for([](TrainOptions& o) { o.stochastic_rounding = true; }).rfind("stochastic-rounding:", 0),
        0u);
    EXPECT_NE(message_for([](TrainOptions& o) { o.model.preset = "d7"; }).find("unknown model preset 'd7'"),
              std::string::npos);
    EXPECT_NE(
        message_for([](TrainOptions& o) { o.model.n_head = 5; }).find("n_embd 384 is not a multiple of n_head 5"),
        std::string::npos);
}

TEST(TrainOptionsTest, DescribesEveryOptionForCheckpoints) {
    TrainOptions options;
    options.learning_rate = 0.1;
    const auto described = describe_options(options);
    const auto find = [&](const std::string& name) {
        for (const auto& [key, value] : described)
            if (key == name) return value;
        return std::string("<missing>");
    };
    EXPECT_EQ(std::stod(find("lr")), 0.1);  // %.17g round-trips
    EXPECT_EQ(find("precision"), "fp32");
    EXPECT_EQ(find("recompute"), "none");
    EXPECT_EQ(find("lr_schedule"), "cosine");
}

}  // namespace
}  // namespace mixgpt
