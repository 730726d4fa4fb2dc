// Training under the document mask (--attention-mask document, issue 39; resume:
// test_train_resume_options.cpp): the checkpoint records the dataset's end-of-text
// token as the separator and a run under the mask trains differently from a causal one; a resume
// with the other mask is refused in one line naming --attention-mask; export leaves the mask out
// and says so; a model without a dataset's documents is refused the mask. --positions document:
// recorded, trains differently from absolute positions under the same mask (GPT-2), a resume with
// the other positions refused in one line, and refused without the document mask.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "interop/export.h"
#include "tests/test_interop_support.h"
#include "model/model_options.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "tokenizer/dataset.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;
using test::error_of;
using test::TempDirectory;

// Under the document mask. With the tiny dataset's documents of 30 to 60 tokens, a third of the
// windows of T = 16 cross a document boundary, most of those of T = 32.
TrainOptions document_masked(TrainOptions options) {
    options.model.attention_mask = "document";
    return options;
}

// Resuming `options`, whose run has trained, for another step is refused in one line holding
// `expected` (the caller has changed an option the checkpoint records).
void expect_resume_refused(TrainOptions options, const std::string& expected) {
    options.steps += 1;
    options.resume = "auto";
    const std::string error = error_of([&] { run_training(options); });
    EXPECT_NE(error.find(expected), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(TrainDocumentMask, RecordsTheSeparatorAndTrainsDifferently) {
    TempDirectory directory("mixgpt_document_mask_differs");
    TrainOptions causal = tiny_llama_train_options(directory.file("causal"));
    causal.seq_len = 32;
    causal.steps = 3;
    TrainOptions masked_run = document_masked(tiny_llama_train_options(directory.file("document")));
    masked_run.seq_len = 32;
    masked_run.steps = 3;
    const TrainResult plain = run_training(causal), documents = run_training(masked_run);
    EXPECT_NE(plain.last_loss, documents.last_loss);
    EXPECT_TRUE(std::isfinite(documents.last_loss));
    const int32_t end_of_text = read_dataset_info(tiny_dataset().dataset_path).eot_id;
    EXPECT_EQ(read_checkpoint(documents.last_checkpoint).config.document_separator, end_of_text);
    EXPECT_EQ(read_checkpoint(plain.last_checkpoint).config.document_separator, -1);
}

TEST(TrainDocumentMask, ResumeWithTheOtherMaskIsRefusedInOneLine) {
    TempDirectory directory("mixgpt_document_mask_switch");
    for (const bool masked_first : {false, true}) {
        TrainOptions options = tiny_train_options(directory.file(masked_first ? "document" : "causal"));
        if (masked_first) options = document_masked(options);
        options.seq_len = 32;
        options.steps = 2;
        run_training(options);
        options.model.attention_mask = masked_first ? "causal" : "document";
        const std::string document =
            "document (separator " + std::to_string(read_dataset_info(tiny_dataset().dataset_path).eot_id) + ")";
        expect_resume_refused(options, masked_first ? "attention_mask is " + document + " there, causal in this run"
                                                    : "attention_mask is causal there, " + document + " in this run");
    }
}

TEST(TrainDocumentMask, ExportLeavesTheMaskOutAndSaysSo) {
    TempDirectory directory("mixgpt_document_mask_export");
    TrainOptions options = document_masked(tiny_llama_train_options(directory.file("run")));
    options.model.positions = "document";
    options.seq_len = 32;
    options.steps = 1;
    options.warmup_steps = 0;
    const interop::ExportResult result = test::train_and_export(options, directory.file("hf"));
    EXPECT_EQ(result.document_separator, read_dataset_info(tiny_dataset().dataset_path).eot_id);
    EXPECT_TRUE(result.document_positions);
    EXPECT_TRUE(std::filesystem::exists(directory.file("hf") + "/model.safetensors"));
}

// --window: recorded in the checkpoint, a resume with another window or pattern refused in one
// line naming them (export's refusal: test_train_recipe.cpp).
TEST(TrainDocumentMask, WindowIsRecordedAndHeld) {
    TempDirectory directory("mixgpt_window_run");
    TrainOptions options = tiny_llama_train_options(directory.file("run"));
    options.model.window = 4;
    options.model.window_pattern = "SL";
    options.steps = 2;
    options.warmup_steps = 0;
    const TrainResult result = run_training(options);
    const GPTConfig saved = read_checkpoint(result.last_checkpoint).config;
    EXPECT_EQ(saved.attention_window, 4);
    EXPECT_EQ(saved.window_pattern_text(), "SL");
    options.model.window_pattern = "LS";
    expect_resume_refused(options,
                          "the attention window is 4 (SL) there, 4 (LS) in this run (--window, --window-pattern)");
}

TEST(TrainDocumentMask, NeedsADatasetsEndOfTextToken) {
    ModelOptions model;
    model.preset = "d2";
    model.attention_mask = "document";
    EXPECT_EQ(model_config(model, 300, 32, 5).document_separator, 5);
    EXPECT_NE(
        error_of([&] { model_config(model, 300, 32); }).find("attention-mask: document needs the documents"),
        std::string::npos);
    model.attention_mask = "windows";
    EXPECT_NE(error_of([&] { model_config(model, 300, 32, 5); }).find("expected causal or document"),
              std::string::npos);
    model.attention_mask.clear();
    model.window_pattern = "SL";
    EXPECT_NE(error_of([&] { model_config(model, 300, 32); }).find("give --window W with it"), std::string::npos);
    model.window = 8;
    model.window_pattern = "SLX";
    EXPECT_NE(error_of([&] { model_config(model, 300, 32); }).find("expected letters L"), std::string::npos);
    model.window_pattern = "SSL";
    const GPTConfig config = model_config(model, 300, 32);
    EXPECT_EQ(config.window_of(0), 8);
    EXPECT_EQ(config.window_of(2), 0);
    EXPECT_EQ(config.window_of(3), 8);
}

TEST(TrainDocumentMask, DocumentPositionsAreRecordedAndHeld) {
    TempDirectory directory("mixgpt_document_positions");
    TrainOptions absolute = document_masked(tiny_train_options(directory.file("absolute")));
    TrainOptions restarted = document_masked(tiny_train_options(directory.file("document")));
    restarted.model.positions = "document";
    for (TrainOptions* options : {&absolute, &restarted}) {
        options->seq_len = 32;
        options->steps = 3;
    }
    const TrainResult plain = run_training(absolute), documents = run_training(restarted);
    EXPECT_NE(plain.last_loss, documents.last_loss);
    EXPECT_TRUE(read_checkpoint(documents.last_checkpoint).config.document_positions);
    EXPECT_FALSE(read_checkpoint(plain.last_checkpoint).config.document_positions);
    restarted.model.positions = "absolute";
    expect_resume_refused(restarted,
                          "refusing checkpoint: positions is document there, absolute in this run (--positions)");
}

TEST(TrainDocumentMask, DocumentPositionsNeedTheDocumentMask) {
    ModelOptions model;
    model.preset = "d2";
    model.positions = "document";
    const std::string error = error_of([&] { model_config(model, 300, 32, 5); });
    EXPECT_NE(error.find("positions: document needs --attention-mask document"), std::string::npos) << error;
    model.attention_mask = "document";
    EXPECT_TRUE(model_config(model, 300, 32, 5).document_positions);
    model.positions = "relative";
    EXPECT_NE(error_of([&] { model_config(model, 300, 32, 5); }).find("expected absolute or document"),
              std::string::npos);
}

}  // namespace
}  // namespace mixgpt
