// Stop and resume equals a straight run (tests/train_equivalence.h) for each option of issues 38
// and 39 that changes what a step computes, in every resume case (precision, stochastic rounding,
// loss scaling, accumulation): the recipe's model options at once (--recipe nanochat, grouped
// key/value heads), the logit soft-cap with the z-loss, the document mask, positions restarted at
// each document, and a sliding window.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <tuple>

#include "tests/test_train_support.h"
#include "tests/train_equivalence.h"

namespace mixgpt {
namespace {

using namespace testing_support;

struct ResumedOption {
    const char* name;
    std::function<void(TrainOptions&)> apply;
};

const std::vector<ResumedOption>& resumed_options() {
    static const std::vector<ResumedOption> options = {
        {"recipe",
         [](TrainOptions& o) {
             o.model.recipe = "nanochat";
             o.model.n_kv_head = 1;
         }},
        // A cap that bends the tiny model's logits and a z-loss weight that moves its gradients.
        {"softcap_z_loss",
         [](TrainOptions& o) {
             o.model.logit_softcap = 2.0;
             o.z_loss = 1e-2;
         }},
        // A third of the windows of T = 16 cross one of the tiny dataset's document boundaries.
        {"document_mask", [](TrainOptions& o) { o.model.attention_mask = "document"; }},
        // GPT-2's learned positions restarted at each document.
        {"document_positions",
         [](TrainOptions& o) {
             o.model.attention_mask = "document";
             o.model.positions = "document";
         }},
        // The first layer windowed (5 of T = 16), the second the whole context, with the document mask.
        {"window",
         [](TrainOptions& o) {
             o.model.attention_mask = "document";
             o.model.window = 5;
             o.model.window_pattern = "SL";
         }},
    };
    return options;
}

class TrainOptionResumeTest : public ::testing::TestWithParam<std::tuple<size_t, ResumeCase>> {};

TEST_P(TrainOptionResumeTest, StopAndResumeEqualsAStraightRun) {
    const ResumedOption& option = resumed_options()[std::get<0>(GetParam())];
    const ResumeCase& c = std::get<1>(GetParam());
    TrainOptions options = resume_case_options(c, "cpu");
    option.apply(options);
    expect_resume_equals_straight_run(options, std::string("mixgpt_option_resume_") + option.name + "_" + c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Options, TrainOptionResumeTest,
    ::testing::Combine(::testing::Range(size_t{0}, resumed_options().size()), ::testing::ValuesIn(resume_cases())),
    [](const ::testing::TestParamInfo<std::tuple<size_t, ResumeCase>>& info) {
        return std::string(resumed_options()[std::get<0>(info.param)].name) + "_" + std::get<1>(info.param).name;
    });

}  // namespace
}  // namespace mixgpt
