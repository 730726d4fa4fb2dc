// `mixgpt study --optimizers` on the tiny dataset: AdamW and Muon (2 seeds each), every run an
// ordinary run of its optimizer; the report's rows, final losses, training seconds and steps to
// AdamW's final validation loss are recomputed here from each run's own metrics.jsonl; bad
// optimizer lists are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/checkpoint.h"
#include "study/precision_study.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;

struct RunRecords {
    std::map<int64_t, double> val_loss;         // by evaluation step
    std::map<int64_t, double> seconds_through;  // training seconds up to and including each step
};

RunRecords read_records(const std::string& path) {
    RunRecords records;
    std::ifstream file(path);
    double seconds = 0;
    for (std::string line; std::getline(file, line);) {
        const nlohmann::json record = nlohmann::json::parse(line);
        const int64_t step = record["step"].get<int64_t>();
        if (record["type"] == "train") {
            seconds += record["ms_per_step"].get<double>() / 1e3;
            records.seconds_through[step] = seconds;
        } else if (record["type"] == "eval") {
            records.val_loss[step] = record["val_loss"].get<double>();
        }
    }
    return records;
}

// The optimizer a checkpoint records (AdamW runs record none: they are as runs were before Muon).
std::string recorded_optimizer(const Checkpoint& checkpoint) {
    for (const auto& [name, value] : checkpoint.options)
        if (name == "optimizer") return value;
    return "adamw";
}

TEST(OptimizerStudyTest, ReportOfAdamwAndMuonAgreesWithTheirRuns) {
    test::TempDirectory directory("mixgpt_optimizer_study");
    StudyOptions options;
    options.train = tiny_train_options("");
    options.train.eval_interval = 2;
    options.train.muon_lr = 0.05;
    options.variants = parse_optimizer_variants("adamw,muon", parse_study_variants("fp32").front());
    options.optimizers = true;
    options.output_dir = directory.path();
    options.bench_steps = 1;
    options.seeds = 2;
    ASSERT_TRUE(run_study(options));

    const nlohmann::json report = nlohmann::json::parse(std::ifstream(directory.file("report.json")));
    EXPECT_EQ(report["compares"], "optimizers");
    ASSERT_EQ(report["runs"].size(), 4u);
    const char* names[] = {"adamw", "adamw", "muon", "muon"};
    std::map<uint64_t, double> adamw_final;  // by seed
    for (size_t i = 0; i < 4; ++i) {
        const nlohmann::json& run = report["runs"][i];
        EXPECT_EQ(run["name"], names[i]);
        EXPECT_EQ(run["optimizer"], names[i]);
        EXPECT_EQ(run["precision"], "fp32");
        const std::string run_directory = directory.file(run["directory"].get<std::string>());
        // Each run is a run of its own optimizer, as its checkpoint records.
        EXPECT_EQ(
            recorded_optimizer(read_checkpoint(checkpoint_path(checkpoint_directory(run_directory), 8))),
            names[i]);
        const RunRecords records = read_records(run_directory + "/metrics.jsonl");
        ASSERT_EQ(run["evaluations"].size(), 4u);  // steps 2, 4, 6, 8
        for (const nlohmann::json& point : run["evaluations"]) {
            const int64_t step = point["step"].get<int64_t>();
            EXPECT_EQ(point["val_loss"].get<double>(), records.val_loss.at(step));
            EXPECT_NEAR(point["train_seconds"].get<double>(), records.seconds_through.at(step), 1e-9);
        }
        EXPECT_EQ(run["final_val_loss"].get<double>(), records.val_loss.at(8));
        const uint64_t seed = run["seed"].get<uint64_t>();
        if (i < 2) adamw_final[seed] = records.val_loss.at(8);
        int64_t expected_steps = -1;
        for (const auto& [step, loss] : records.val_loss)
            if (loss <= adamw_final.at(seed)) {
                expected_steps = step;
                break;
            }
        EXPECT_EQ(run["steps_to_target"].get<int64_t>(), expected_steps) << run["directory"];
        if (i < 2) {
            EXPECT_NE(expected_steps, -1);  // AdamW reaches its own final loss, at its end at the latest
        }
    }
    EXPECT_NE(report["runs"][0]["final_val_loss"], report["runs"][2]["final_val_loss"]);
    ASSERT_EQ(report["spreads"].size(), 2u);
    EXPECT_EQ(report["spreads"][1]["name"], "muon");

    std::ifstream markdown(directory.file("report.md"));
    const std::string text((std::istreambuf_iterator<char>(markdown)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("# Optimizer study"), std::string::npos);
    EXPECT_NE(text.find("## Steps to adamw's final validation loss"), std::string::npos);
    EXPECT_NE(text.find("| muon (seed 12) |"), std::string::npos) << text;
    EXPECT_NE(text.find("muon: val loss | seconds |"), std::string::npos) << text;
    EXPECT_NE(text.find("| vs adamw |"), std::string::npos) << text;
}

TEST(OptimizerStudyTest, RefusesUnknownOrRepeatedOptimizers) {
    const StudyVariant fp32 = parse_study_variants("fp32").front();
    EXPECT_THROW(parse_optimizer_variants("adamw,sgd", fp32), Error);
    EXPECT_THROW(parse_optimizer_variants("muon,muon", fp32), Error);
    EXPECT_THROW(parse_optimizer_variants("", fp32), Error);
    const std::vector<StudyVariant> variants = parse_optimizer_variants("muon-fp32,adamw", fp32);
    ASSERT_EQ(variants.size(), 2u);
    EXPECT_EQ(variants[0].name, "muon-fp32");  // the order listed: the first is the target
    EXPECT_EQ(variants[0].muon_ns_dtype, DType::f32);
    EXPECT_EQ(variants[1].optimizer, OptimizerKind::adamw);
}

}  // namespace
}  // namespace mixgpt
