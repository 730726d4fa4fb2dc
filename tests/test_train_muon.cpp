// `train --optimizer muon` on the CPU: both families learn, Muon's momentum sits at the hidden
// matrices' elements of m (and AdamW's moments everywhere else), resume is bit-exact, an imported
// checkpoint starts Muon's momentum at zero, a run's optimizer cannot change on resume, and
// --stochastic-rounding rounds Muon's matrices too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "interop/import.h"
#include "model/checkpoint.h"
#include "tests/test_interop_support.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "tests/train_equivalence.h"
#include "train/memory_check.h"
#include "train/parameter_groups.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;
using test::error_of;
using test::TempDirectory;

TrainOptions muon_options(TrainOptions options, DType ns_dtype) {
    options.optimizer = OptimizerKind::muon;
    options.muon_ns_dtype = ns_dtype;
    options.muon_lr = 0.02;
    return options;
}

double mean_loss(const std::map<int64_t, double>& losses, int64_t first, int64_t last) {
    double sum = 0;
    for (int64_t step = first; step <= last; ++step) sum += losses.at(step);
    return sum / static_cast<double>(last - first + 1);
}

bool all_zero(const std::vector<float>& values, int64_t begin, int64_t end) {
    return std::all_of(values.begin() + begin, values.begin() + end,
                       [](float value) { return value == 0.f; });
}

struct FamilyCase {
    const char* name;
    bool llama;
    DType ns_dtype;
};

class TrainMuon : public ::testing::TestWithParam<FamilyCase> {};

// 30 steps: the loss of the last five falls well below that of the first five, and the checkpoint
// holds Muon's momentum at every hidden matrix's elements of m with v zero there (AdamW never ran
// on them), and AdamW's moments on the other groups.
TEST_P(TrainMuon, LearnsWithMomentumOnTheHiddenMatricesOnly) {
    const FamilyCase& c = GetParam();
    TempDirectory directory(std::string("mixgpt_train_muon_") + c.name);
    TrainOptions options = muon_options(
        c.llama ? tiny_llama_train_options(directory.file("run")) : tiny_train_options(directory.file("run")),
        c.ns_dtype);
    options.steps = 30;
    const TrainResult result = run_training(options);
    ASSERT_EQ(result.steps_done, 30);
    const std::map<int64_t, double> losses = train_losses(result.metrics_path);
    EXPECT_LT(mean_loss(losses, 26, 30), 0.8 * mean_loss(losses, 1, 5));

    const Checkpoint checkpoint = read_checkpoint(result.last_checkpoint);
    EXPECT_EQ(checkpoint.status.optimizer_steps, 30);
    const ParameterGroups groups =
        muon_parameter_groups(checkpoint.config, ParameterLayout(checkpoint.config));
    for (const MuonMatrix& matrix : groups.muon) {
        const int64_t end = matrix.offset + matrix.rows * matrix.cols;
        EXPECT_FALSE(all_zero(checkpoint.adam_m, matrix.offset, end)) << matrix.name;
        EXPECT_TRUE(all_zero(checkpoint.adam_v, matrix.offset, end)) << matrix.name;
    }
    for (const AdamWGroup& group : groups.adamw)
        EXPECT_FALSE(all_zero(checkpoint.adam_v, group.begin, group.end)) << group.begin;
}

INSTANTIATE_TEST_SUITE_P(Families, TrainMuon,
                         ::testing::Values(FamilyCase{"gpt2_bf16", false, DType::bf16},
                                           FamilyCase{"gpt2_fp32", false, DType::f32},
                                           FamilyCase{"llama_bf16", true, DType::bf16}),
                         [](const ::testing::TestParamInfo<FamilyCase>& info) { return info.param.name; });

// Bit-exact resume (tests/train_equivalence.h) with Muon: fp32 with accumulation, and the bf16
// (also with --stochastic-rounding) and fp16 (dynamic loss scaling) working copies, GPT-2 and
// Llama-style.
TEST(TrainMuonResume, StopAndResumeEqualsAStraightRun) {
    for (const ResumeCase& c : resume_cases()) {
        if (c.precision == Precision::fp8) continue;
        SCOPED_TRACE(c.name);
        expect_resume_equals_straight_run(muon_options(resume_case_options(c, "cpu"), DType::bf16),
                                          std::string("mixgpt_muon_resume_") + c.name);
    }
    TrainOptions llama = muon_options(tiny_llama_train_options(""), DType::bf16);
    llama.precision = Precision::bf16;
    expect_resume_equals_straight_run(llama, "mixgpt_muon_resume_llama_bf16");
}

TEST(TrainMuonResume, AnotherOptimizerIsRefusedInOneLine) {
    TempDirectory directory("mixgpt_muon_switch");
    for (const bool muon_first : {false, true}) {
        TrainOptions options = tiny_train_options(directory.file(muon_first ? "muon" : "adamw"));
        options.steps = 2;
        if (muon_first) options = muon_options(options, DType::bf16);
        run_training(options);
        options.steps = 4;
        options.resume = "auto";
        options.optimizer = muon_first ? OptimizerKind::adamw : OptimizerKind::muon;
        const std::string error = error_of([&] { run_training(options); });
        EXPECT_NE(error.find(std::string("was trained with ") + (muon_first ? "muon" : "adamw")),
                  std::string::npos)
            << error;
        EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    }
}

// `import` writes no optimizer state: `train --resume --optimizer muon` starts from zero momentum,
// says so once, and records muon from then on.
TEST(TrainMuonResume, ImportedCheckpointStartsMuonAtZero) {
    TempDirectory directory("mixgpt_muon_import");
    TrainOptions options = tiny_train_options(directory.file("run"));
    options.steps = 3;
    test::train_and_export(options, directory.file("hf"));
    interop::import_hf({directory.file("hf"), directory.file("imported"), false});

    TrainOptions resumed = muon_options(tiny_train_options(directory.file("imported")), DType::bf16);
    resumed.steps = 5;
    resumed.resume = "auto";
    ::testing::internal::CaptureStderr();
    const TrainResult result = run_training(resumed);
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(result.steps_done, 5);
    const std::string line = "Muon's momentum starts at zero";
    ASSERT_NE(log.find(line), std::string::npos) << log;
    EXPECT_EQ(log.find(line, log.find(line) + 1), std::string::npos) << log;

    resumed.steps = 6;
    EXPECT_EQ(run_training(resumed).steps_done, 6);  // its own checkpoint now says muon
    resumed.optimizer = OptimizerKind::adamw;
    resumed.steps = 7;
    EXPECT_NE(error_of([&] { run_training(resumed); }).find("was trained with muon"), std::string::npos);
}

// bf16 with --stochastic-rounding: the run learns as the one rounding to nearest does (final
// validation losses within 10%), and its Muon matrices' weights differ from that run's (the rounding
// of their working copy feeds every later step). The rounding itself: tests/test_cpu_muon.cpp.
TEST(TrainMuonRounding, StochasticRoundingTrainsMuonsMatricesToo) {
    TempDirectory directory("mixgpt_train_muon_stochastic");
    TrainOptions options = muon_options(tiny_train_options(directory.file("nearest")), DType::bf16);
    options.precision = Precision::bf16;
    options.steps = 30;
    const TrainResult nearest = run_training(options);
    options.output_dir = directory.file("stochastic");
    options.stochastic_rounding = true;
    const TrainResult stochastic = run_training(options);
    const std::map<int64_t, double> losses = train_losses(stochastic.metrics_path);
    EXPECT_LT(mean_loss(losses, 26, 30), 0.8 * mean_loss(losses, 1, 5));
    EXPECT_NEAR(stochastic.last_val_loss, nearest.last_val_loss, 0.1 * nearest.last_val_loss);
    const Checkpoint a = read_checkpoint(nearest.last_checkpoint),
                     b = read_checkpoint(stochastic.last_checkpoint);
    for (const MuonMatrix& matrix : muon_parameter_groups(b.config, ParameterLayout(b.config)).muon) {
        const int64_t end = matrix.offset + matrix.rows * matrix.cols;
        EXPECT_FALSE(std::equal(a.parameters.begin() + matrix.offset, a.parameters.begin() + end,
                                b.parameters.begin() + matrix.offset))
            << matrix.name;
    }
}

// d2 at width 32: 2 layers of 12 C^2 hidden-matrix elements (q, k, v, output, 4C x C, C x 4C).
TEST(TrainMuonOptions, DryRunCountsTheIterates) {
    TrainOptions options = muon_options(tiny_train_options("unused"), DType::bf16);
    const GPTConfig config = model_config(options.model, 256, options.seq_len);
    EXPECT_EQ(muon_iterate_bytes(config, DType::bf16), size_t{2} * 2 * 12 * 32 * 32);
    EXPECT_EQ(muon_iterate_bytes(config, DType::f32), size_t{4} * 2 * 12 * 32 * 32);
    // Under ZeRO-1 a rank keeps the first of every W matrices of a shape: of the 8 C x C matrices
    // (q, k, v, output; 2 layers) and 2 each of 4C x C and C x 4C, rank 0 keeps 4 + 1 + 1 under 2
    // ranks, 2 + 1 + 1 under 4 and 1 + 1 + 1 under 8 (in C^2: 4 + 4 + 4, 2 + 4 + 4, 1 + 4 + 4).
    EXPECT_EQ(muon_iterate_bytes(config, DType::bf16, 2), size_t{2} * (4 + 4 + 4) * 32 * 32);
    EXPECT_EQ(muon_iterate_bytes(config, DType::bf16, 4), size_t{2} * (2 + 4 + 4) * 32 * 32);
    EXPECT_EQ(muon_iterate_bytes(config, DType::bf16, 8), size_t{2} * (1 + 4 + 4) * 32 * 32);
    std::ostringstream plans;
    print_memory_plans(options, plans);
    EXPECT_NE(plans.str().find("Muon iterates"), std::string::npos) << plans.str();
    std::ostringstream adamw_plans;
    print_memory_plans(tiny_train_options("unused"), adamw_plans);
    EXPECT_EQ(adamw_plans.str().find("Muon iterates"), std::string::npos);
}

TEST(TrainMuonOptions, RefusesBadValuesInOneLine) {
    TrainOptions options = muon_options(tiny_train_options("unused"), DType::bf16);
    options.muon_momentum = 1;
    EXPECT_NE(error_of([&] { plan_training(options, 256, 1); }).find("muon-momentum"), std::string::npos);
    options.muon_momentum = 0.95;
    options.muon_ns_steps = 0;
    EXPECT_NE(error_of([&] { plan_training(options, 256, 1); }).find("muon-ns-steps"), std::string::npos);
    options.muon_ns_steps = 5;
    options.head_lr = -1;
    EXPECT_NE(error_of([&] { plan_training(options, 256, 1); }).find("head-lr"), std::string::npos);
    options.head_lr.reset();
    options.embedding_lr = 0.3;
    const TrainPlan plan = plan_training(options, 256, 1);
    ASSERT_TRUE(plan.muon.has_value());
    EXPECT_FLOAT_EQ(plan.muon->embedding_lr, 0.3f);
    EXPECT_FLOAT_EQ(plan.muon->head_lr, static_cast<float>(3 * options.learning_rate));
    EXPECT_FLOAT_EQ(plan.muon->hyper.learning_rate, 0.02f);
    options.embedding_lr.reset();
    options.learning_rate = 1e-3;  // the KJV sweeps' --lr: their best embedding rate 3e-2, head rate 3e-3
    EXPECT_FLOAT_EQ(plan_training(options, 256, 1).muon->embedding_lr, 3e-2f);
    EXPECT_FLOAT_EQ(plan_training(options, 256, 1).muon->head_lr, 3e-3f);
    EXPECT_FALSE(plan_training(tiny_train_options("unused"), 256, 1).muon.has_value());
}

}  // namespace
}  // namespace mixgpt
