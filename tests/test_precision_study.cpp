// `mixgpt study` on the tiny dataset: a two-precision study writes a report that parses and
// agrees with its runs' metrics; a study started again keeps complete runs, resumes an
// interrupted one from its checkpoint and runs only the missing ones; bad run lists are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sha256.h"
#include "study/study_telemetry.h"
#include "model/checkpoint.h"
#include "model/checkpoint_model.h"
#include "study/precision_study.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;

StudyOptions tiny_study(const std::string& directory, const std::string& precisions) {
    StudyOptions options;
    options.train = tiny_train_options("");
    options.train.eval_interval = 4;
    options.variants = parse_study_variants(precisions);
    options.output_dir = directory;
    options.bench_steps = 1;
    return options;
}

nlohmann::json read_json(const std::string& path) {
    std::ifstream file(path);
    return nlohmann::json::parse(file);
}

// The "type" and "step" of every line of a metrics file.
std::vector<std::pair<std::string, int64_t>> metrics_lines(const std::string& path) {
    std::vector<std::pair<std::string, int64_t>> lines;
    std::ifstream file(path);
    for (std::string line; std::getline(file, line);) {
        const nlohmann::json record = nlohmann::json::parse(line);
        lines.emplace_back(record["type"].get<std::string>(), record["step"].get<int64_t>());
    }
    return lines;
}

// The study's fp8 reading of hand-made telemetry records: per layer the least headroom_bits of its
// FP8 tensors (null, the head's layer -1 and layers past the blocks left out), and the run's least
// over the steps and layers, with where it was; none without fp8 entries.
TEST(PrecisionStudyTest, Fp8HeadroomIsTheLeastOverTheTensors) {
    const auto record = [](nlohmann::ordered_json fp8) {
        nlohmann::ordered_json line = {{"blocks", {{{"output_amax", 1.0}}, {{"output_amax", 2.0}}}},
                                       {"tensors", nlohmann::ordered_json::array()}};
        if (!fp8.is_null()) line["fp8"] = fp8;
        return line;
    };
    const auto tensor = [](int layer, nlohmann::ordered_json headroom) {
        return nlohmann::ordered_json{{"layer", layer}, {"headroom_bits", headroom}};
    };
    const StudyTelemetry fp8 = study_telemetry(
        {{10, record({tensor(0, 1.5), tensor(0, 0.25), tensor(1, 3.0), tensor(-1, -9.0)})},
         {20, record({tensor(0, nullptr), tensor(1, -0.5), tensor(1, 2.0), tensor(5, -7.0)})}});
    EXPECT_EQ(fp8.at(10)[0].fp8_headroom_bits, 0.25);
    EXPECT_EQ(fp8.at(10)[1].fp8_headroom_bits, 3.0);
    EXPECT_TRUE(std::isinf(fp8.at(20)[0].fp8_headroom_bits)) << "a null headroom (amax 0) is none";
    EXPECT_EQ(fp8.at(20)[1].fp8_headroom_bits, -0.5);
    const StudyTelemetry plain = study_telemetry({{10, record(nullptr)}, {20, record(nullptr)}});
    const TelemetryDeparture least = telemetry_departures(fp8, plain).fp8_headroom;
    EXPECT_EQ(least.layer, 1);
    EXPECT_EQ(least.step, 20);
    EXPECT_EQ(least.value, -0.5);
    EXPECT_LT(telemetry_departures(plain, fp8).fp8_headroom.layer, 0);
}

TEST(PrecisionStudyTest, ReportOfTwoPrecisionsAgreesWithTheirRuns) {
    test::TempDirectory directory("mixgpt_study");
    ASSERT_TRUE(run_study(tiny_study(directory.path(), "fp16,fp32")));

    const nlohmann::json report = read_json(directory.file("report.json"));
    ASSERT_EQ(report["runs"].size(), 2u);
    EXPECT_EQ(report["runs"][0]["name"], "fp32");  // the reference comes first
    EXPECT_EQ(report["runs"][1]["name"], "fp16");
    EXPECT_EQ(report["steps"], 8);
    EXPECT_EQ(report["tokens_per_run"], 8 * 4 * 16);
    for (const nlohmann::json& run : report["runs"]) {
        const std::string metrics = directory.file(run["directory"].get<std::string>() + "/metrics.jsonl");
        const std::map<int64_t, double> losses = train_losses(metrics);
        EXPECT_EQ(losses.size(), 8u);
        EXPECT_EQ(run["steps"], 8);
        ASSERT_EQ(run["evaluations"].size(), 2u);  // steps 4 and 8
        EXPECT_EQ(run["final_val_loss"], run["evaluations"][1]["val_loss"]);
        EXPECT_NEAR(run["final_perplexity"].get<double>(), std::exp(run["final_val_loss"].get<double>()),
                    1e-9);
        EXPECT_GE(run["evaluations"][1]["grad_zero_fraction"].get<double>(), 0.0);
        EXPECT_LT(run["evaluations"][1]["grad_zero_fraction"].get<double>(), 1.0);
        EXPECT_GT(run["bench"]["tokens_per_second"].get<double>(), 0);
        EXPECT_GT(run["peak_memory_bytes"].get<double>(), 0);
        EXPECT_FALSE(
            newest_valid_checkpoint(checkpoint_directory(directory.file(run["directory"].get<std::string>())))
                .empty());
    }
    const nlohmann::json& fp32 = report["runs"][0];
    const nlohmann::json& fp16 = report["runs"][1];
    EXPECT_EQ(fp32["evaluations"][1]["gap_to_fp32"], 0.0);
    EXPECT_DOUBLE_EQ(fp16["evaluations"][1]["gap_to_fp32"].get<double>(),
                     fp16["final_val_loss"].get<double>() - fp32["final_val_loss"].get<double>());
    EXPECT_FALSE(fp32["bench"]["emulated"].get<bool>());
    EXPECT_TRUE(fp16["bench"]["emulated"].get<bool>());
    EXPECT_EQ(fp16["loss_scale"], "dynamic");
    EXPECT_EQ(fp16["final_loss_scale"], 65536.0);

    // The runs measure telemetry at each evaluation; fp16's largest departure of a block output's
    // max |x| from fp32's, recomputed here from the two metrics files.
    const auto telemetry = [&](const nlohmann::json& run) {
        std::map<int64_t, nlohmann::json> records;
        std::ifstream file(directory.file(run["directory"].get<std::string>() + "/metrics.jsonl"));
        for (std::string line; std::getline(file, line);) {
            nlohmann::json record = nlohmann::json::parse(line);
            if (record["type"] == "telemetry") records[record["step"].get<int64_t>()] = record;
        }
        return records;
    };
    const std::map<int64_t, nlohmann::json> fp32_telemetry = telemetry(fp32), fp16_telemetry = telemetry(fp16);
    ASSERT_EQ(fp16_telemetry.size(), 2u);  // steps 4 and 8
    double largest = -1, ratio_there = 0;
    for (const auto& [step, record] : fp16_telemetry)
        for (size_t l = 0; l < record["blocks"].size(); ++l) {
            const double ratio = record["blocks"][l]["output_amax"].get<double>() /
                                 fp32_telemetry.at(step)["blocks"][l]["output_amax"].get<double>();
            if (std::fabs(std::log2(ratio)) > largest) {
                largest = std::fabs(std::log2(ratio));
                ratio_there = ratio;
            }
        }
    EXPECT_DOUBLE_EQ(fp16["telemetry_departures"]["output_amax_ratio"]["value"].get<double>(), ratio_there);
    EXPECT_NE(ratio_there, 1.0) << "fp16 rounds the block outputs";
    EXPECT_TRUE(fp32["telemetry_departures"]["output_amax_ratio"].is_null());

    std::ifstream markdown(directory.file("report.md"));
    const std::string text((std::istreambuf_iterator<char>(markdown)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("| fp32 |"), std::string::npos);
    EXPECT_NE(text.find("(emulated)"), std::string::npos);
    EXPECT_NE(text.find("## Where each run departs from fp32 (telemetry)"), std::string::npos);
    for (const char* figure : {"loss_curves.png", "val_gap.png", "throughput.png", "memory.png"})
        EXPECT_TRUE(std::filesystem::exists(directory.file(figure))) << figure;
}

TEST(PrecisionStudyTest, ContinuesAnInterruptedStudyRunningOnlyWhatIsMissing) {
    test::TempDirectory directory("mixgpt_study_resume");
    ASSERT_TRUE(run_study(tiny_study(directory.path(), "fp32")));
    const std::string fp32_metrics = directory.file("fp32/metrics.jsonl");
    const std::string fp32_hash = sha256_file_hex(fp32_metrics);

    // bf16 stopped by SIGTERM after step 5 of 8, as an interrupted study leaves it.
    TrainOptions interrupted = tiny_train_options(directory.file("bf16"));
    interrupted.precision = Precision::bf16;
    interrupted.loss_scale = "none";
    interrupted.gradient_zero_stats = true;
    interrupted.eval_interval = 4;
    interrupted.checkpoint_interval = 4;
    ASSERT_TRUE(run_training(interrupted, [](const TrainMetrics& metrics) {
                    if (metrics.step == 5) std::raise(SIGTERM);
                }).stopped_by_signal);

    ASSERT_TRUE(run_study(tiny_study(directory.path(), "fp32,bf16,fp16")));
    EXPECT_EQ(sha256_file_hex(fp32_metrics), fp32_hash);  // complete: not run again
    const auto bf16_lines = metrics_lines(directory.file("bf16/metrics.jsonl"));
    const std::pair<std::string, int64_t> resumed_at_5{"resume", 5};
    EXPECT_EQ(std::count(bf16_lines.begin(), bf16_lines.end(), resumed_at_5), 1);
    EXPECT_EQ(train_losses(directory.file("bf16/metrics.jsonl")).size(), 8u);
    EXPECT_EQ(read_json(directory.file("report.json"))["runs"].size(), 3u);

    // The resumed bf16 run ends where an uninterrupted one does.
    test::TempDirectory straight("mixgpt_study_straight");
    ASSERT_TRUE(run_study(tiny_study(straight.path(), "bf16")));
    EXPECT_EQ(read_json(straight.file("report.json"))["runs"][0]["final_val_loss"],
              read_json(directory.file("report.json"))["runs"][1]["final_val_loss"]);
}

// An fp8 variant trains in fp8 with its own scaling: the run's checkpoint records both.
TEST(PrecisionStudyTest, Fp8VariantRunsWithItsScaling) {
    test::TempDirectory directory("mixgpt_study_fp8");
    StudyOptions options = tiny_study(directory.path(), "fp8-current");
    ASSERT_TRUE(run_study(options));
    const nlohmann::json report = read_json(directory.file("report.json"));
    ASSERT_EQ(report["runs"].size(), 1u);
    EXPECT_EQ(report["runs"][0]["precision"], "fp8");
    const Checkpoint checkpoint = read_checkpoint(newest_valid_checkpoint(
        study_run_directory(options, options.variants[0], options.train.seed) + "/checkpoints"));
    EXPECT_EQ(checkpoint.precision, Precision::fp8);
    EXPECT_EQ(checkpoint_option(checkpoint, "fp8_scaling"), "current");
    EXPECT_FALSE(checkpoint.fp8_scaling.empty());
}

// Several seeds: each variant runs once per initialization seed, all with the first seed's data
// order; the report's mean and spread are those of the runs' own final losses.
TEST(PrecisionStudyTest, SeveralSeedsGiveEachPrecisionAMeanAndSpread) {
    test::TempDirectory directory("mixgpt_study_seeds");
    StudyOptions options = tiny_study(directory.path(), "bf16,fp32");
    options.seeds = 2;
    ASSERT_TRUE(run_study(options));

    const nlohmann::json report = read_json(directory.file("report.json"));
    EXPECT_EQ(report["seeds"], nlohmann::json::array({11, 12}));
    EXPECT_EQ(report["data_seed"], 11);
    ASSERT_EQ(report["runs"].size(), 4u);
    const std::vector<std::string> directories = {"fp32/seed-11", "fp32/seed-12", "bf16/seed-11",
                                                  "bf16/seed-12"};
    std::map<std::string, std::vector<double>> final_losses;
    for (size_t i = 0; i < 4; ++i) {
        const nlohmann::json& run = report["runs"][i];
        EXPECT_EQ(run["directory"], directories[i]);
        EXPECT_EQ(run["seed"], i % 2 == 0 ? 11 : 12);
        const Checkpoint checkpoint =
            read_checkpoint(newest_valid_checkpoint(checkpoint_directory(directory.file(directories[i]))));
        EXPECT_EQ(checkpoint.seed, i % 2 == 0 ? 11u : 12u);
        EXPECT_EQ(checkpoint_option(checkpoint, "data_seed"), "11");
        final_losses[run["name"].get<std::string>()].push_back(run["final_val_loss"].get<double>());
    }
    EXPECT_NE(final_losses["fp32"][0], final_losses["fp32"][1]);  // another initialization
    // The second seed's fp32 run gap is measured against the second seed's fp32 run.
    EXPECT_EQ(report["runs"][1]["evaluations"][1]["gap_to_fp32"], 0.0);

    ASSERT_EQ(report["spreads"].size(), 2u);
    for (const nlohmann::json& spread : report["spreads"]) {
        const std::vector<double>& losses = final_losses[spread["name"].get<std::string>()];
        const nlohmann::json& loss = spread["final_val_loss"];
        EXPECT_EQ(loss["per_seed"], nlohmann::json(losses));
        EXPECT_NEAR(loss["mean"].get<double>(), (losses[0] + losses[1]) / 2, 1e-12);
        // Two values: the sample standard deviation is |a - b| / sqrt(2).
        EXPECT_NEAR(loss["standard_deviation"].get<double>(),
                    std::abs(losses[0] - losses[1]) / std::sqrt(2.0), 1e-12);
        EXPECT_EQ(loss["min"], std::min(losses[0], losses[1]));
    }

    // The second seed's run is what `train --seed 12 --data-seed 11` gives, and not `--seed 12` alone.
    TrainOptions same = tiny_train_options(directory.file("direct"));
    same.precision = Precision::bf16;
    same.loss_scale = "none";
    same.eval_interval = 4;
    same.seed = 12;
    same.data_seed = 11;
    EXPECT_EQ(run_training(same).last_val_loss, final_losses["bf16"][1]);
    TrainOptions other_order = same;
    other_order.output_dir = directory.file("other_order");
    other_order.data_seed.reset();
    EXPECT_NE(run_training(other_order).last_val_loss, final_losses["bf16"][1]);

    std::ifstream markdown(directory.file("report.md"));
    const std::string text((std::istreambuf_iterator<char>(markdown)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("## Final validation loss over 2 seeds"), std::string::npos);
    EXPECT_NE(text.find("| bf16 (seed 12) |"), std::string::npos);
    EXPECT_TRUE(std::filesystem::exists(directory.file("final_loss.png")));
}

TEST(PrecisionStudyTest, RefusesUnknownOrRepeatedRuns) {
    EXPECT_THROW(parse_study_variants("fp32,fp4"), Error);
    EXPECT_THROW(parse_study_variants("bf16,bf16"), Error);
    EXPECT_THROW(parse_study_variants(""), Error);
    const std::vector<StudyVariant> ordered = parse_study_variants("bf16-sr,fp16-noscale,fp32");
    ASSERT_EQ(ordered.size(), 3u);
    EXPECT_EQ(ordered[0].name, "fp32");
    EXPECT_EQ(ordered[2].name, "bf16-sr");
    EXPECT_TRUE(ordered[2].stochastic_rounding);
    EXPECT_EQ(ordered[1].loss_scale, "none");
}

}  // namespace
}  // namespace mixgpt
