// train --telemetry-interval under --zero on 2 ranks (train/telemetry.h): each rank measures the
// masters and mean gradients of its shard, cut into many pieces by small buckets, and the sums are
// added over the ranks, so that the record is a replicated run's. Without clipping (whose factor
// depends on the norm's summation order) the two runs hold the same weights bit for bit in fp32,
// so norms agree within 1e-12 relative (double sums in another order) and the counts, the
// exponent bins, the activations' statistics (rank 0's in both) and the fp16-free rest exactly;
// AdamW and Muon (whose ZeRO-1 layout keeps whole matrices).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/mpi/mpi_test_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;

std::vector<nlohmann::json> zero_telemetry_lines(const std::string& metrics) {
    std::vector<nlohmann::json> lines;
    std::ifstream file(metrics);
    for (std::string line; std::getline(file, line);) {
        nlohmann::json record = nlohmann::json::parse(line);
        if (record["type"] == "telemetry") lines.push_back(record);
    }
    return lines;
}

void expect_sharded_record_is_replicated(const nlohmann::json& sharded, const nlohmann::json& replicated) {
    const std::string step = " at step " + replicated["step"].dump();
    ASSERT_EQ(sharded["tensors"].size(), replicated["tensors"].size());
    for (size_t i = 0; i < replicated["tensors"].size(); ++i) {
        const nlohmann::json &got = sharded["tensors"][i], &want = replicated["tensors"][i];
        const std::string what = want["name"].get<std::string>() + step;
        EXPECT_EQ(got["name"], want["name"]);
        for (const char* norm : {"grad_norm", "weight_norm", "update_ratio"}) {
            const double g = got[norm].get<double>(), w = want[norm].get<double>();
            EXPECT_LE(std::fabs(g - w), 1e-12 * std::fabs(w)) << what << " " << norm << ": " << g << " vs " << w;
        }
        for (const char* count : {"grad_small_fraction", "grad_non_finite", "elements"})
            EXPECT_EQ(got[count], want[count]) << what << " " << count;
    }
    EXPECT_EQ(sharded["grad_exponents"], replicated["grad_exponents"]) << step;
    EXPECT_EQ(sharded["output_exponents"], replicated["output_exponents"]) << step;
    EXPECT_EQ(sharded["blocks"], replicated["blocks"]) << step;
    EXPECT_EQ(sharded["logit_amax"], replicated["logit_amax"]) << step;
}

class DataParallelTelemetryTest : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(DataParallelTelemetryTest, ZeroRecordsWhatReplicatedRecords) {
    SharedTempDirectory directory("mixgpt_mpi_telemetry");
    TrainOptions options = tiny_train_options(directory.file("replicated"));
    options.dataset = shared_tiny_dataset_path();
    options.batch_size = 2;
    options.steps = 3;
    options.grad_clip = 0;
    options.optimizer = GetParam();
    options.telemetry_interval = 1;
    options.bucket_mb = 4096.0 / (1 << 20);  // 4 KiB buckets: many pieces a rank
    options.collective_timeout = kTestCollectiveTimeout;
    const TrainResult replicated = run_training(options);
    options.output_dir = directory.file("sharded");
    options.zero_optimizer = true;
    const TrainResult sharded = run_training(options);
    if (world_rank() != 0) return;
    const std::vector<nlohmann::json> want = zero_telemetry_lines(replicated.metrics_path),
                                      got = zero_telemetry_lines(sharded.metrics_path);
    ASSERT_EQ(want.size(), 3u);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) expect_sharded_record_is_replicated(got[k], want[k]);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, DataParallelTelemetryTest,
                         ::testing::Values(OptimizerKind::adamw, OptimizerKind::muon),
                         [](const ::testing::TestParamInfo<OptimizerKind>& info) {
                             return info.param == OptimizerKind::adamw ? "adamw" : "muon";
                         });

}  // namespace
}  // namespace mixgpt
