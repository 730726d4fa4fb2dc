// Training with the logit soft-cap (--logit-softcap) and the z-loss (--z-loss), issue 38 (resume:
// test_train_resume_options.cpp): the reported loss leaves the z-loss out while metrics.jsonl
// records its mean term; export refuses a capped checkpoint in
// one line naming the option (no Hugging Face class mixgpt writes caps its logits).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "interop/export.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;
using test::error_of;
using test::TempDirectory;

// A cap that bends the tiny model's logits and a z-loss weight that moves its gradients.
TrainOptions with_softcap_and_z_loss(TrainOptions options) {
    options.model.logit_softcap = 2.0;
    options.z_loss = 1e-2;
    return options;
}

// step -> the z_loss of every "train" line (absent: not recorded).
std::map<int64_t, double> z_loss_terms(const std::string& metrics_path) {
    std::map<int64_t, double> terms;
    std::ifstream file(metrics_path);
    for (std::string line; std::getline(file, line);) {
        const nlohmann::json record = nlohmann::json::parse(line);
        if (record["type"] == "train" && record.contains("z_loss"))
            terms[record["step"].get<int64_t>()] = record["z_loss"].get<double>();
    }
    return terms;
}

// The first step's loss is computed before any update: with the z-loss it is the same number as
// without (the loss leaves the term out), and the term is logged; the updates then differ.
TEST(TrainZLossTest, TheLossLeavesTheTermOutAndMetricsRecordIt) {
    TempDirectory directory("mixgpt_z_loss");
    TrainOptions plain = tiny_train_options(directory.file("plain"));
    plain.steps = 3;
    TrainOptions z = plain;
    z.output_dir = directory.file("z");
    z.z_loss = 1e-2;
    const TrainResult plain_run = run_training(plain), z_run = run_training(z);
    const std::map<int64_t, double> plain_losses = train_losses(plain_run.metrics_path),
                                    z_losses = train_losses(z_run.metrics_path);
    EXPECT_EQ(z_losses.at(1), plain_losses.at(1));
    EXPECT_NE(z_losses.at(3), plain_losses.at(3));
    EXPECT_TRUE(z_loss_terms(plain_run.metrics_path).empty());
    const std::map<int64_t, double> terms = z_loss_terms(z_run.metrics_path);
    ASSERT_EQ(terms.size(), 3u);
    // 1e-2 * logsumexp^2 with logsumexp near log(vocabulary) for a fresh model: of order 1e-2 * 5^2.
    for (const auto& [step, term] : terms) EXPECT_GT(term, 1e-3) << "step " << step;
}

TEST(TrainSoftcapTest, ExportRefusesACappedCheckpointNamingTheOption) {
    TempDirectory directory("mixgpt_softcap_export");
    TrainOptions options = with_softcap_and_z_loss(tiny_train_options(directory.file("run")));
    options.steps = 1;
    options.warmup_steps = 0;
    run_training(options);
    interop::ExportOptions exporting;
    exporting.source = options.output_dir;
    exporting.output = directory.file("hf");
    const std::string message = error_of([&] { interop::export_hf(exporting); });
    EXPECT_NE(message.find(": --logit-softcap 2: no Hugging Face class mixgpt exports caps its logits"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_FALSE(std::filesystem::exists(exporting.output));
}

}  // namespace
}  // namespace mixgpt
