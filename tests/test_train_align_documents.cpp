// train --align-documents: a run whose windows start at documents stops and resumes exactly as a
// straight run (tests/train_equivalence.h), and records the option; resuming it without the option
// is refused naming the loader's document alignment.
#include <gtest/gtest.h>

#include "model/checkpoint.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "tests/train_equivalence.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;

TEST(TrainAlignDocuments, StopAndResumeEqualsAStraightRun) {
    TrainOptions options = resume_case_options(resume_cases().front(), "cpu");
    options.align_documents = true;
    expect_resume_equals_straight_run(options, "mixgpt_align_documents_resume");
}

TEST(TrainAlignDocuments, TheOptionIsRecordedAndAResumeWithoutItIsRefused) {
    test::TempDirectory directory("mixgpt_align_documents_refusal");
    TrainOptions options = tiny_train_options(directory.file("run"));
    options.align_documents = true;
    options.steps = 2;
    const TrainResult result = run_training(options);
    const Checkpoint checkpoint = read_checkpoint(result.last_checkpoint);
    bool recorded = false;
    for (const auto& [name, value] : checkpoint.options)
        recorded = recorded || (name == "align_documents" && value == "true");
    EXPECT_TRUE(recorded);
    TrainOptions resumed = tiny_train_options(directory.file("resumed"));
    resumed.steps = 3;
    resumed.resume = result.last_checkpoint;
    const std::string message = test::error_of([&] { run_training(resumed); });
    EXPECT_NE(message.find("document alignment"), std::string::npos) << message;
}

}  // namespace
}  // namespace mixgpt
