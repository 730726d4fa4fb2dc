// Bad input, the data a run is evaluated on (issue 36): a mixture's weights must be finite and
// positive; training's validation covers every component that has a validation split, whatever
// the order of --dataset; `eval` of a mixture run without --dataset scores what training's
// validation scored, every component, and refuses another dataset found at the path the run
// recorded (datasets are recorded by identity, tokenizer/dataset_path.h). Each case records every file of the
// fixture before it runs, and checks them all afterwards.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/bad_inputs_support.h"

namespace mixgpt {
namespace {

using namespace test;
namespace fs = std::filesystem;

// The last val_loss of a run's metrics.jsonl; NaN when it has none.
double last_val_loss(const std::string& metrics_path) {
    double loss = std::nan("");
    for (const std::string& line : lines_of(read_text(metrics_path))) {
        const nlohmann::json record = nlohmann::json::parse(line);
        if (record.contains("val_loss")) loss = record["val_loss"].get<double>();
    }
    return loss;
}

class BadMixtureTest : public ::testing::Test {
protected:
    // The common fixture, plus noval/ (the corpus with the fixture's tokenizer, no validation
    // split) and more/ (other documents, the same tokenizer, a validation split of its own).
    static void SetUpTestSuite() {
        fixture_ = make_bad_input_fixture("mixgpt_bad_mixture").release();
        const TempDirectory& d = *fixture_;
        const std::vector<std::string> documents = testing_support::generated_documents(40, 31);
        for (size_t i = 0; i < documents.size(); ++i)
            d.write("more_corpus/doc" + std::to_string(i) + ".txt", documents[i]);
        BadInputRunner runner(d);
        for (const auto& [output, input, fraction] :
             {std::tuple{"{D}/noval", "{D}/corpus", "0"}, std::tuple{"{D}/more", "{D}/more_corpus", "0.3"}}) {
            const Outcome prepared =
                runner.run({"prepare", "--output", output, "--tokenizer", "{DATA}/tokenizer.model",
                            "--val-fraction", fraction, "--threads", "1", input});
            ASSERT_EQ(prepared.exit_status, 0) << prepared.err;
        }
    }
    static void TearDownTestSuite() {
        delete fixture_;
        fixture_ = nullptr;
    }

    static inline TempDirectory* fixture_ = nullptr;
    BadInputRunner runner_{*fixture_};
};

// Weights -1 and nan were taken as weight 1 (-1 stood for "no weight" inside).
TEST_F(BadMixtureTest, WeightsMustBeFiniteAndPositive) {
    const std::vector<BadInput> cases = {
        {"weight -1",
         train_with({"--dataset", "{DATA}:-1", "--dataset", "{D}/more"}),
         1,
         {"--dataset {DATA}:-1: '-1' is not a positive weight"}},
        {"weight nan",
         train_with({"--dataset", "{DATA}:nan", "--dataset", "{D}/more"}),
         1,
         {"--dataset {DATA}:nan: 'nan' is not a positive weight"}},
        {"weight inf",
         train_with({"--dataset", "{DATA}", "--dataset", "{D}/more", "--weights", "1,inf"}),
         1,
         {"--weights: 'inf' is not a positive weight"}},
    };
    for (const BadInput& bad : cases) runner_.check(bad);
}

// A mixture whose first component had no validation split trained without evaluation, warning
// that "the validation split" was too short; listed the other way round, it evaluated.
TEST_F(BadMixtureTest, ValidationCoversEveryComponentWithASplit) {
    TempDirectory scratch("mixgpt_mixture_noval_first");
    const Outcome trained = runner_.run(train_with(
        {"--dataset", "{D}/noval", "--dataset", "{DATA}", "--eval-interval", "1"}, scratch.file("run")));
    ASSERT_EQ(trained.exit_status, 0) << trained.err;
    EXPECT_EQ(trained.err.find("no evaluation"), std::string::npos) << trained.err;
    EXPECT_FALSE(std::isnan(last_val_loss(scratch.file("run/metrics.jsonl"))));
}

// eval of a mixture run without --dataset scored the first component only.
TEST_F(BadMixtureTest, EvalOfAMixtureRunScoresEveryComponent) {
    TempDirectory scratch("mixgpt_mixture_eval");
    const Outcome trained =
        runner_.run(train_with({"--dataset", "{DATA}", "--dataset", "{D}/more"}, scratch.file("run")));
    ASSERT_EQ(trained.exit_status, 0) << trained.err;
    const Outcome evaluated = runner_.run({"eval", scratch.file("run"), "--threads", "1", "--json"});
    ASSERT_EQ(evaluated.exit_status, 0) << evaluated.err;
    const nlohmann::json report = nlohmann::json::parse(evaluated.out);
    const std::string source = report["source"].get<std::string>();
    EXPECT_NE(source.find(fixture_->file("data")), std::string::npos) << source;
    EXPECT_NE(source.find(fixture_->file("more")), std::string::npos) << source;
    EXPECT_NEAR(report["mean_loss"].get<double>(), last_val_loss(scratch.file("run/metrics.jsonl")), 1e-5);
}

// eval without --dataset scored whatever dataset it found at the path the run recorded.
TEST_F(BadMixtureTest, EvalRefusesAnotherDatasetAtTheTrainedPath) {
    TempDirectory scratch("mixgpt_mixture_identity");
    const std::string swapped = scratch.file("web");
    fs::copy(fixture_->file("data"), swapped, fs::copy_options::recursive);
    const Outcome trained = runner_.run(train_with({"--dataset", swapped}, scratch.file("run")));
    ASSERT_EQ(trained.exit_status, 0) << trained.err;
    fs::remove_all(swapped);
    fs::copy(fixture_->file("more"), swapped, fs::copy_options::recursive);
    const std::map<std::string, std::string> before = file_hashes(scratch.path());
    const Outcome evaluated = runner_.run({"eval", scratch.file("run"), "--threads", "1"});
    EXPECT_EQ(evaluated.exit_status, 1) << evaluated.err;
    std::string line;
    EXPECT_TRUE(is_one_error_line(evaluated.err, line));
    EXPECT_NE(line.find(swapped + ": not the dataset " + scratch.file("run")), std::string::npos) << line;
    EXPECT_EQ(file_hashes(scratch.path()), before);
}

}  // namespace
}  // namespace mixgpt
