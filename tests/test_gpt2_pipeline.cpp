// GPT-2's tokenizer through mixgpt's commands: prepare (ids equal to tiktoken's, the files and
// identity recorded), a couple of training steps, eval, sample, and export to the files of
// Hugging Face's GPT2TokenizerFast, compared with OpenAI's own encoder.json and vocab.bpe, then
// import of that folder.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sha256.h"
#include "eval/run_eval.h"
#include "eval/run_sample.h"
#include "interop/export.h"
#include "interop/import.h"
#include "model/checkpoint.h"
#include "tests/test_gpt2_support.h"
#include "tests/test_process_support.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"
#include "tests/test_train_support.h"
#include "tokenizer/dataset.h"
#include "tokenizer/prepare.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::TempDirectory;
using testing::gpt2_reference;
using testing::gpt2_tokenizer;

std::string read_text(const std::string& path) { return testing::read_file(path); }

// The command line: --tokenizer gpt2 without --gpt2-files is one line; with them, prepare works.
TEST(Gpt2Cli, PrepareTakesTheTokenizerChoice) {
    const TempDirectory directory;
    const std::string corpus = directory.write("corpus/a.txt", gpt2_reference().documents[0].first);
    const auto run = [&](const std::vector<std::string>& arguments) {
        return test::wait_for(test::spawn(arguments, directory.file("out.txt"), directory.file("err.txt")),
                              directory.file("out.txt"), directory.file("err.txt"));
    };
    const test::Outcome missing =
        run({"prepare", corpus, "--output", directory.file("x"), "--tokenizer", "gpt2"});
    EXPECT_NE(missing.exit_status, 0);
    EXPECT_EQ(missing.err,
              "mixgpt: error: --tokenizer gpt2 needs --gpt2-files DIR (encoder.json + vocab.bpe, or a "
              ".tiktoken file)\n");
    const test::Outcome made =
        run({"prepare", corpus, "--output", directory.file("data"), "--tokenizer", "gpt2", "--gpt2-files",
             testing::gpt2_files_directory(), "--val-fraction", "0"});
    EXPECT_EQ(made.exit_status, 0) << made.err;
    EXPECT_EQ(read_dataset_info(directory.file("data/dataset.h5")).tokenizer_kind, "gpt2");
    EXPECT_TRUE(fs::exists(directory.file("data/vocab.bpe")));
}

// A GPT-2 dataset of the fixture's hand-written documents and generated ones, a run of two
// steps on it, and its export; made once for the tests below.
class Gpt2PipelineTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        directory_ = new TempDirectory("mixgpt_gpt2_pipeline");
        const auto& documents = gpt2_reference().documents;
        for (size_t i = 0; i < documents.size(); ++i)
            directory_->write("corpus/hand" + std::to_string(100 + i) + ".txt", documents[i].first);
        const std::vector<std::string> generated = testing_support::generated_documents(80, 7);
        for (size_t i = 0; i < generated.size(); ++i)
            directory_->write("corpus/generated" + std::to_string(100 + i) + ".txt", generated[i]);
        PrepareOptions prepare =
            testing_support::tiny_prepare_options(directory_->file("corpus"), directory_->file("data"), 0);
        prepare.tokenizer_path = testing::gpt2_files_directory();
        prepare.tokenizer_kind = TokenizerKind::gpt2;
        prepared_ = new PrepareResult(run_prepare(prepare));

        TrainOptions train = testing_support::tiny_train_options(directory_->file("run"));
        train.dataset = prepared_->dataset_path;
        train.steps = 2;
        train.warmup_steps = 1;
        run_training(train);
        interop::ExportOptions export_options;
        export_options.source = directory_->file("run");
        export_options.output = directory_->file("hf");
        interop::export_hf(export_options);
    }
    static void TearDownTestSuite() {
        delete prepared_;
        delete directory_;
    }
    static std::string run() { return directory_->file("run"); }
    static std::string exported() { return directory_->file("hf"); }
    static EvalReport evaluate(const std::string& checkpoint) {
        EvalOptions options;
        options.checkpoint = checkpoint;
        options.device.threads = 1;
        return run_evaluation(options);
    }

    static TempDirectory* directory_;
    static PrepareResult* prepared_;
};

TempDirectory* Gpt2PipelineTest::directory_ = nullptr;
PrepareResult* Gpt2PipelineTest::prepared_ = nullptr;

TEST_F(Gpt2PipelineTest, PrepareGivesTheReferenceIdsAndRecordsTheTokenizer) {
    const DatasetInfo info = read_dataset_info(prepared_->dataset_path);
    EXPECT_EQ(info.tokenizer_kind, "gpt2");
    EXPECT_EQ(info.vocab_size, 50257);
    EXPECT_EQ(info.eot_id, 50256);
    EXPECT_EQ(info.tokenizer_sha256, gpt2_tokenizer().sha256());
    ASSERT_EQ(info.tokenizer_files.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {  // copies of the given files, beside the dataset
        EXPECT_EQ(fs::path(info.tokenizer_files[i]).parent_path(),
                  fs::path(prepared_->dataset_path).parent_path());
        EXPECT_EQ(sha256_file_hex(info.tokenizer_files[i]), sha256_file_hex(gpt2_tokenizer().files()[i]));
    }
    EXPECT_EQ(info.tokenizer_path, info.tokenizer_files[0]);
    const Tokenizer loaded = Tokenizer::load(info.tokenizer_path);
    EXPECT_EQ(loaded.sha256(), info.tokenizer_sha256);

    std::map<std::string, std::vector<int32_t>> reference(gpt2_reference().documents.begin(),
                                                          gpt2_reference().documents.end());
    size_t compared = 0;
    for (const char* split : {"train", "val"}) {
        const std::vector<int32_t> tokens = testing::read_tokens(prepared_->dataset_path, split);
        const std::vector<int64_t> offsets = testing::read_offsets(prepared_->dataset_path, split);
        for (size_t d = 0; d + 1 < offsets.size(); ++d) {
            const std::vector<int32_t> ids(tokens.begin() + offsets[d], tokens.begin() + offsets[d + 1] - 1);
            EXPECT_EQ(tokens[static_cast<size_t>(offsets[d + 1] - 1)], 50256);
            const auto found = reference.find(loaded.decode(ids));
            if (found == reference.end()) continue;  // a generated document
            EXPECT_EQ(ids, found->second) << found->first;
            ++compared;
        }
    }
    EXPECT_EQ(compared, reference.size());
}

TEST_F(Gpt2PipelineTest, LongDocumentsAreCutWithoutChangingTokens) {
    const TempDirectory directory;
    // Every line end is followed by more whitespace (a blank line, indentation): cutting after a
    // newline would split a whitespace run that GPT-2 keeps whole.
    std::string text;
    for (int i = 0; text.size() < 2 * TextSegment::kSegmentBytes + 999; ++i)
        text += "line " + std::to_string(i) + " \xC3\xA9t\xC3\xA9\n\n \n\t\n" +
                std::string(static_cast<size_t>(i % 4), ' ') + "x\xE3\x80\x80y \n\n";
    directory.write("long/1.txt", text);
    PrepareOptions options =
        testing_support::tiny_prepare_options(directory.file("long"), directory.file("out"), 0);
    options.tokenizer_path = testing::gpt2_files_directory();
    options.val_fraction = 0;
    const PrepareResult result = run_prepare(options);
    std::vector<int32_t> expected = gpt2_tokenizer().encode(text);
    expected.push_back(gpt2_tokenizer().eot_id());
    EXPECT_TRUE(testing::read_tokens(result.dataset_path, "train") == expected);
}

TEST_F(Gpt2PipelineTest, ATokenizerOfAnotherKindIsRefused) {
    const TempDirectory directory;
    PrepareOptions options =
        testing_support::tiny_prepare_options(directory_->file("corpus"), directory.file("out"), 0);
    options.tokenizer_path = testing::tiny_tokenizer_path();
    options.tokenizer_kind = TokenizerKind::gpt2;
    EXPECT_EQ(
        error_of([&] { run_prepare(options); }),
        testing::tiny_tokenizer_path() +
            ": not a GPT-2 tokenizer file (encoder.json, vocab.bpe, vocab.json, merges.txt, *.tiktoken)");
    EXPECT_FALSE(fs::exists(directory.file("out")));
}

TEST_F(Gpt2PipelineTest, TrainingEvalAndSampleRunOnTheDataset) {
    const EvalReport report = evaluate(run());
    EXPECT_GT(report.totals.tokens, 0);
    EXPECT_TRUE(std::isfinite(report.mean_loss));
    EXPECT_LT(report.mean_loss, std::log(50257.0) + 1.0);  // two steps from a random start
    EXPECT_GT(report.bits_per_byte, 0);

    EvalOptions text_eval;
    text_eval.checkpoint = run();
    text_eval.text_inputs = {directory_->file("corpus/hand100.txt")};
    text_eval.seq_len = 8;
    text_eval.device.threads = 1;
    const EvalReport text_report = run_evaluation(text_eval);
    // n = the reference's tokens + the end of text: floor((n - 1) / 8) windows of 8 targets.
    const auto reference_tokens = static_cast<int64_t>(gpt2_reference().documents[0].second.size());
    EXPECT_EQ(text_report.totals.tokens, reference_tokens / 8 * 8);

    SampleOptions sample;
    sample.checkpoint = run();
    sample.prompt = "And God said";
    sample.max_new_tokens = 6;
    sample.stop_at_end_of_text = false;
    sample.device.threads = 1;
    const std::vector<std::string> texts = run_sampling(sample);
    ASSERT_EQ(texts.size(), 1u);
    EXPECT_FALSE(texts[0].empty());
}

TEST_F(Gpt2PipelineTest, ExportWritesOpenAisVocabularyAsGpt2TokenizerFastFiles) {
    const std::string folder = exported();
    const nlohmann::json openai_vocab =
        nlohmann::json::parse(read_text(testing::gpt2_files_directory() + "/encoder.json"));
    EXPECT_EQ(nlohmann::json::parse(read_text(folder + "/vocab.json")), openai_vocab);
    EXPECT_EQ(read_text(folder + "/merges.txt"), read_text(testing::gpt2_files_directory() + "/vocab.bpe"));

    const nlohmann::json tokenizer = nlohmann::json::parse(read_text(folder + "/tokenizer.json"));
    EXPECT_EQ(tokenizer.at("model").at("type"), "BPE");
    EXPECT_EQ(tokenizer.at("model").at("vocab"), openai_vocab);
    const nlohmann::json& merges = tokenizer.at("model").at("merges");
    ASSERT_EQ(merges.size(), 50000u);
    EXPECT_EQ(merges.front(), "\xC4\xA0 t");  // "Ġ t", the first line of vocab.bpe after its header
    for (const char* part : {"pre_tokenizer", "post_processor", "decoder"}) {
        EXPECT_EQ(tokenizer.at(part).at("type"), "ByteLevel") << part;
        EXPECT_EQ(tokenizer.at(part).at("use_regex"), true) << part;
    }
    EXPECT_EQ(tokenizer.at("pre_tokenizer").at("add_prefix_space"), false);
    EXPECT_TRUE(tokenizer.at("normalizer").is_null());
    const nlohmann::json& added = tokenizer.at("added_tokens");
    ASSERT_EQ(added.size(), 1u);
    EXPECT_EQ(added[0].at("id"), 50256);
    EXPECT_EQ(added[0].at("content"), "<|endoftext|>");
    EXPECT_EQ(added[0].at("special"), true);

    const nlohmann::json config = nlohmann::json::parse(read_text(folder + "/tokenizer_config.json"));
    EXPECT_EQ(config.at("tokenizer_class"), "GPT2Tokenizer");
    EXPECT_EQ(config.at("add_prefix_space"), false);
    EXPECT_EQ(config.at("eos_token"), "<|endoftext|>");
    const nlohmann::json special = nlohmann::json::parse(read_text(folder + "/special_tokens_map.json"));
    EXPECT_EQ(special.at("bos_token"), "<|endoftext|>");
    const nlohmann::json model_config = nlohmann::json::parse(read_text(folder + "/config.json"));
    EXPECT_EQ(model_config.at("vocab_size"), 50257);
    EXPECT_EQ(model_config.at("eos_token_id"), 50256);
    EXPECT_FALSE(fs::exists(folder + "/tokenizer.model"));
    EXPECT_NE(read_text(folder + "/README.md").find("GPT2TokenizerFast"), std::string::npos);
}

TEST_F(Gpt2PipelineTest, ImportOfTheExportKeepsTheTokenizerAndTheLoss) {
    const TempDirectory directory;
    const std::string imported = directory.file("imported");
    interop::import_hf({exported(), imported, false});
    EXPECT_TRUE(fs::exists(imported + "/vocab.json"));
    EXPECT_TRUE(fs::exists(imported + "/merges.txt"));
    const Checkpoint checkpoint = read_checkpoint(newest_valid_checkpoint(imported + "/checkpoints"));
    EXPECT_EQ(checkpoint.tokenizer_sha256, gpt2_tokenizer().sha256());
    EXPECT_EQ(checkpoint.tokenizer_path, imported + "/vocab.json");
    const EvalReport before = evaluate(run()), after = evaluate(imported);
    EXPECT_EQ(after.totals.tokens, before.totals.tokens);
    EXPECT_EQ(after.totals.nats, before.totals.nats);
}

}  // namespace
}  // namespace mixgpt
