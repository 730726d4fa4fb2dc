// Evaluation: window plans, the loss totals' arithmetic, agreement of `mixgpt eval` with the
// trainer's last evaluation, sliding windows against window-by-window forward passes, and raw
// text input tokenized with the checkpoint's tokenizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "eval/evaluate.h"
#include "eval/run_eval.h"
#include "model/token_batch.h"
#include "eval/windows.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "tokenizer/dataset.h"
#include "tokenizer/prepare.h"
#include "tokenizer/tokenizer.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;
using test::TempDirectory;

TEST(EvalWindowsTest, NonOverlappingWindowsMatchTheLoader) {
    const std::vector<EvalWindow> windows = plan_windows(100, 16, 16);
    ASSERT_EQ(windows.size(), 6u);  // floor((100 - 1) / 16)
    for (size_t i = 0; i < windows.size(); ++i) {
        EXPECT_EQ(windows[i].start, static_cast<int64_t>(i) * 16);
        EXPECT_EQ(windows[i].first_scored, 0);
    }
}

TEST(EvalWindowsTest, SlidingWindowsScoreEveryCoveredTokenOnce) {
    for (int stride : {1, 3, 5, 8, 16}) {
        const int64_t n = 101;
        const int t = 16;
        const std::vector<EvalWindow> windows = plan_windows(n, t, stride);
        std::vector<int> scored(static_cast<size_t>(n), 0);
        for (const EvalWindow& window : windows) {
            ASSERT_LE(window.start + t + 1, n);
            for (int position = window.first_scored; position < t; ++position)
                ++scored[static_cast<size_t>(window.start + position + 1)];  // target index in the stream
        }
        const int64_t covered_end = windows.back().start + t + 1;
        EXPECT_EQ(scored[0], 0);
        for (int64_t i = 1; i < n; ++i)
            EXPECT_EQ(scored[static_cast<size_t>(i)], i < covered_end ? 1 : 0) << i;
        EXPECT_GT(covered_end + stride, n - 1) << "a further window would have fitted";
    }
    EXPECT_THROW(plan_windows(16, 16, 16), Error);  // needs T + 1 tokens
    EXPECT_THROW(plan_windows(100, 16, 17), Error);
    EXPECT_THROW(plan_windows(100, 16, 0), Error);
}

TEST(EvalWindowsTest, LossTotalsArithmetic) {
    LossTotals totals;
    totals.nats = 300.0;
    totals.tokens = 100;
    EXPECT_DOUBLE_EQ(totals.mean_loss(), 3.0);
    EXPECT_DOUBLE_EQ(totals.perplexity(), std::exp(3.0));
    // 300 nats = 300 / ln 2 bits over 100 tokens * 4 bytes.
    EXPECT_DOUBLE_EQ(totals.bits_per_byte(4.0), 300.0 / std::log(2.0) / 400.0);
    EXPECT_TRUE(std::isnan(LossTotals{}.mean_loss()));
}

DeviceOptions single_thread() {
    DeviceOptions device;
    device.threads = 1;
    return device;
}

class EvalRunTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        directory_ = new TempDirectory("mixgpt_eval_test");
        TrainOptions options = tiny_train_options(directory_->file("run"));
        options.steps = 20;
        trained_ = new TrainResult(run_training(options));
    }
    static void TearDownTestSuite() {
        delete trained_;
        delete directory_;
    }
    static TempDirectory* directory_;
    static TrainResult* trained_;
};
TempDirectory* EvalRunTest::directory_ = nullptr;
TrainResult* EvalRunTest::trained_ = nullptr;

TEST_F(EvalRunTest, EvalOfTheValidationSplitEqualsTheTrainersLastEvaluation) {
    EvalOptions options;
    options.checkpoint = directory_->file("run");
    options.device.threads = 1;
    const EvalReport report = run_evaluation(options);
    EXPECT_EQ(report.step, 20);
    EXPECT_EQ(report.mean_loss, trained_->last_val_loss);
    EXPECT_EQ(report.seq_len, 16);
    EXPECT_EQ(report.stride, 16);
    const DatasetInfo info = read_dataset_info(tiny_dataset().dataset_path);
    EXPECT_EQ(report.totals.tokens, (info.val.tokens - 1) / 16 * 16);
    const double bytes_per_token = static_cast<double>(info.val.bytes) / static_cast<double>(info.val.tokens);
    EXPECT_DOUBLE_EQ(report.bits_per_byte, report.totals.nats / std::log(2.0) /
                                               (static_cast<double>(report.totals.tokens) * bytes_per_token));
    EXPECT_NE(eval_report_json(report).find("\"bits_per_byte\""), std::string::npos);

    // The same windows read into memory instead of through the loader: the same totals.
    options.max_tokens = info.val.tokens;
    const EvalReport in_memory = run_evaluation(options);
    EXPECT_EQ(in_memory.totals.nats, report.totals.nats);
    EXPECT_EQ(in_memory.totals.tokens, report.totals.tokens);
}

TEST_F(EvalRunTest, SlidingWindowsAgreeWithOneForwardPassPerWindow) {
    CheckpointModel loaded = CheckpointModel::read(directory_->file("run"));
    loaded.instantiate(single_thread(), 4, 16);
    const DatasetInfo info = read_dataset_info(tiny_dataset().dataset_path);
    std::vector<int32_t> tokens(200);
    h5::File::open_read(info.shards.front().path)
        .read_range("/val/tokens", h5::Type::i32, tokens.data(), 0, 200);

    for (int stride : {16, 5}) {
        const LossTotals batched = evaluate_tokens(*loaded.model, tokens, stride);
        // Reference: each window alone through forward(), its scored positions summed here.
        CheckpointModel single = CheckpointModel::read(directory_->file("run"));
        single.instantiate(single_thread(), 1, 16);
        TokenBatch batch(*single.backend, 1, 16);
        LossTotals reference;
        for (const EvalWindow& window : plan_windows(200, 16, stride)) {
            batch.upload(tokens.data() + window.start);
            const std::vector<float> losses =
                read_floats(*single.backend, single.model->forward(batch.inputs(), batch.targets()));
            for (int position = window.first_scored; position < 16; ++position)
                reference.nats += losses[position];
            reference.tokens += 16 - window.first_scored;
        }
        EXPECT_EQ(batched.tokens, reference.tokens) << stride;
        EXPECT_NEAR(batched.nats, reference.nats, 1e-6 * reference.nats) << stride;
    }
}

// A split is read window by window (T + 1 tokens at a time, each once per window), never whole:
// memory does not grow with the split. Streams are scored one after the other, each from its
// start, as the shards of a dataset folder are.
TEST_F(EvalRunTest, StridedEvaluationStreamsTheSplitWindowByWindow) {
    CheckpointModel loaded = CheckpointModel::read(directory_->file("run"));
    loaded.instantiate(single_thread(), 4, 16);
    const DatasetInfo info = read_dataset_info(tiny_dataset().dataset_path);
    std::vector<int32_t> tokens(300);
    h5::File::open_read(info.shards.front().path)
        .read_range("/val/tokens", h5::Type::i32, tokens.data(), 0, 300);
    const std::vector<int32_t> first(tokens.begin(), tokens.begin() + 170),
        second(tokens.begin() + 170, tokens.end());
    int64_t largest_read = 0, reads = 0;
    const auto stream_of = [&](const std::vector<int32_t>& part) {
        return TokenStream{static_cast<int64_t>(part.size()),
                           [&part, &largest_read, &reads](int64_t offset, int64_t count, int32_t* out) {
                               largest_read = std::max(largest_read, count);
                               ++reads;
                               std::copy_n(part.begin() + offset, count, out);
                           }};
    };
    Progress progress("eval", 0, "window");
    const LossTotals streamed =
        evaluate_streams(*loaded.model, {stream_of(first), stream_of(second)}, 5, &progress);
    EXPECT_EQ(largest_read, 17);
    EXPECT_EQ(reads, stride_window_count(170, 16, 5) + stride_window_count(130, 16, 5));
    const LossTotals a = evaluate_tokens(*loaded.model, first, 5),
                     b = evaluate_tokens(*loaded.model, second, 5);
    EXPECT_EQ(streamed.tokens, a.tokens + b.tokens);
    EXPECT_NEAR(streamed.nats, a.nats + b.nats, 1e-9 * streamed.nats);

    // Through `mixgpt eval --stride --max-tokens`: the same windows as one in-memory stream.
    EvalOptions options;
    options.checkpoint = directory_->file("run");
    options.device.threads = 1;
    options.batch_size = 4;
    options.stride = 5;
    options.max_tokens = 300;
    const EvalReport report = run_evaluation(options);
    const LossTotals whole = evaluate_tokens(*loaded.model, tokens, 5);
    EXPECT_EQ(report.totals.tokens, whole.tokens);
    EXPECT_NEAR(report.totals.nats, whole.nats, 1e-9 * whole.nats);
}

TEST_F(EvalRunTest, RawTextIsTokenizedWithTheCheckpointsTokenizer) {
    EvalOptions options;
    options.checkpoint = trained_->last_checkpoint;
    options.text_inputs = {tiny_dataset().corpus_directory};
    options.stride = 8;
    options.device = single_thread();
    const EvalReport report = run_evaluation(options);

    // Independent count: every document's tokens plus its end-of-text token.
    const Tokenizer tokenizer = Tokenizer::load(tiny_dataset().tokenizer_path);
    int64_t tokens = 0, bytes = 0;
    for (const auto& entry : std::filesystem::directory_iterator(tiny_dataset().corpus_directory)) {
        std::ifstream file(entry.path());
        std::stringstream text;
        text << file.rdbuf();
        tokens += static_cast<int64_t>(tokenizer.encode(text.str()).size()) + 1;
        bytes += static_cast<int64_t>(text.str().size());
    }
    EXPECT_DOUBLE_EQ(report.bytes_per_token, static_cast<double>(bytes) / static_cast<double>(tokens));
    const int64_t windows = (tokens - 17) / 8 + 1;
    EXPECT_EQ(report.totals.tokens, 16 + (windows - 1) * 8);
    EXPECT_TRUE(std::isfinite(report.mean_loss));
    EXPECT_NE(report.source.find("text "), std::string::npos);
}

TEST_F(EvalRunTest, RefusesATokenizerOrDatasetOfAnotherTokenizer) {
    const PrepareResult other =
        run_prepare(tiny_prepare_options(tiny_dataset().corpus_directory, directory_->file("other"), 290));

    const auto message_for = [](const EvalOptions& options) {
        return test::error_of([&] { run_evaluation(options); });
    };
    EvalOptions options;
    options.checkpoint = trained_->last_checkpoint;
    options.device = single_thread();
    options.text_inputs = {tiny_dataset().corpus_directory};
    options.tokenizer = other.tokenizer_path;
    EXPECT_NE(message_for(options).find(other.tokenizer_path + ": tokenizer_sha256 is "), std::string::npos)
        << message_for(options);
    options.text_inputs.clear();
    options.tokenizer.clear();
    options.dataset = other.dataset_path;
    EXPECT_NE(message_for(options).find(other.dataset_path + ": tokenizer_sha256 is "), std::string::npos)
        << message_for(options);
}

}  // namespace
}  // namespace mixgpt
