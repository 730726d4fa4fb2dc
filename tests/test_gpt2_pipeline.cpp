// GPT-2's tokenizer through mixgpt's commands: prepare (ids equal to tiktoken's, the files and
// identity recorded), --append and --resume of a GPT-2 dataset folder, a couple of training
// steps, eval, sample, and export to the files of Hugging Face's GPT2TokenizerFast, compared with
// OpenAI's own encoder.json and vocab.bpe, then import of that folder.
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
#include "interop/import.h"
#include "model/checkpoint.h"
#include "tests/test_gpt2_support.h"
#include "tests/test_process_support.h"
#include "tests/test_interop_support.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"
#include "tests/test_train_support.h"
#include "tokenizer/dataset.h"
#include "tokenizer/dataset_index.h"
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
    EXPECT_EQ(read_dataset_info(directory.file("data")).tokenizer.kind, "gpt2");
    EXPECT_TRUE(fs::exists(directory.file("data/vocab.bpe")));
}

// A GPT-2 dataset of the fixture's hand-written documents and generated ones, a run of two
// steps on it, and its export; made once for the tests below. The hand-written documents go in
// as JSON lines: one holds control characters, NUL among them, and a text file with a NUL byte in
// its first 64 bytes is refused as binary (tokenizer/input_sniff.h).
class Gpt2PipelineTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        directory_ = new TempDirectory("mixgpt_gpt2_pipeline");
        const auto& documents = gpt2_reference().documents;
        std::string lines;
        for (const auto& document : documents)
            lines += nlohmann::json({{"text", document.first}}).dump() + "\n";
        directory_->write("corpus/hand.jsonl", lines);
        directory_->write("text/hand100.txt", documents[0].first);
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
        test::train_and_export(train, directory_->file("hf"));
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
    EXPECT_EQ(info.tokenizer.kind, "gpt2");
    EXPECT_EQ(info.vocab_size, 50257);
    EXPECT_EQ(info.eot_id, 50256);
    EXPECT_EQ(info.tokenizer.sha256, gpt2_tokenizer().sha256());
    EXPECT_EQ(info.tokenizer.files, (std::vector<std::string>{"encoder.json", "vocab.bpe"}));
    const std::vector<std::string> paths = info.tokenizer_paths();
    ASSERT_EQ(paths.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {  // copies of the given files, in the dataset folder
        EXPECT_EQ(fs::path(paths[i]).parent_path(), fs::path(prepared_->dataset_path));
        EXPECT_EQ(sha256_file_hex(paths[i]), sha256_file_hex(gpt2_tokenizer().files()[i]));
    }
    EXPECT_EQ(info.tokenizer_path(), paths[0]);
    const Tokenizer loaded = Tokenizer::load(info.tokenizer_path());
    EXPECT_EQ(loaded.sha256(), info.tokenizer.sha256);
    for (const ShardInfo& shard : info.shards) {  // each shard records the same identity
        const DatasetInfo file = read_dataset_info(shard.path);
        EXPECT_EQ(file.tokenizer.kind, "gpt2") << shard.path;
        EXPECT_EQ(file.tokenizer.files, info.tokenizer.files) << shard.path;
        EXPECT_EQ(file.tokenizer.sha256, info.tokenizer.sha256) << shard.path;
        EXPECT_EQ(file.tokenizer_path(), info.tokenizer_path()) << shard.path;
    }

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

// The SHA-256 of every shard of a dataset folder, by name.
std::map<std::string, std::string> shard_hashes(const std::string& folder) {
    std::map<std::string, std::string> hashes;
    for (const ShardRecord& shard : read_index(folder + "/" + kIndexFileName).shards)
        hashes[shard.file] = sha256_file_hex(folder + "/" + shard.file);
    return hashes;
}

// --append and --resume take a GPT-2 dataset's own tokenizer from its folder: an append gives
// the tokens of one run over both corpora, a prepare stopped after two shards and resumed gives
// the bytes of an uninterrupted run, and another tokenizer given to an append is refused.
TEST_F(Gpt2PipelineTest, AppendAndResumeKeepTheGpt2Tokenizer) {
    const TempDirectory directory;
    const auto write_corpus = [&](const std::string& name, int count, uint64_t seed) {
        const std::vector<std::string> documents = testing_support::generated_documents(count, seed);
        for (size_t i = 0; i < documents.size(); ++i)
            directory.write(name + "/" + std::to_string(100 + i) + ".txt", documents[i]);
        return directory.file(name);
    };
    const std::string first = write_corpus("first", 40, 11), second = write_corpus("second", 30, 12);
    const auto options = [&](const std::vector<std::string>& inputs, const std::string& output) {
        PrepareOptions prepare = testing_support::tiny_prepare_options(first, directory.file(output), 0);
        prepare.corpus.inputs = inputs;
        prepare.tokenizer_path = testing::gpt2_files_directory();
        prepare.tokenizer_kind = TokenizerKind::gpt2;
        prepare.val_fraction = 0.2;
        prepare.shard_tokens = 600;
        return prepare;
    };
    const PrepareResult once = run_prepare(options({first, second}, "once"));
    ASSERT_GE(once.shards, 4);

    run_prepare(options({first}, "grown"));
    const std::map<std::string, std::string> before = shard_hashes(directory.file("grown"));
    PrepareOptions append = options({second}, "grown");
    append.append = true;
    append.tokenizer_path.clear();  // the dataset's own
    append.tokenizer_kind.reset();
    const PrepareResult grown = run_prepare(append);
    EXPECT_EQ(grown.train.documents + grown.val.documents, 70);
    const std::map<std::string, std::string> after = shard_hashes(directory.file("grown"));
    for (const auto& [name, hash] : before) EXPECT_EQ(after.at(name), hash) << name;  // untouched
    for (const char* split : {"train", "val"}) {
        EXPECT_EQ(testing::read_tokens(directory.file("grown"), split),
                  testing::read_tokens(once.dataset_path, split))
            << split;
        EXPECT_EQ(testing::read_offsets(directory.file("grown"), split),
                  testing::read_offsets(once.dataset_path, split))
            << split;
    }
    const DatasetIndex index = read_index(directory.file("grown/index.json"));
    EXPECT_EQ(index.tokenizer.kind, "gpt2");
    EXPECT_EQ(index.tokenizer.files, (std::vector<std::string>{"encoder.json", "vocab.bpe"}));
    EXPECT_EQ(index.tokenizer.sha256, gpt2_tokenizer().sha256());

    PrepareOptions other = options({second}, "grown");
    other.append = true;
    other.tokenizer_path = testing::tiny_tokenizer_path();
    other.tokenizer_kind.reset();
    const std::string refused = error_of([&] { run_prepare(other); });
    const std::string expected = testing::tiny_tokenizer_path() + ": not the tokenizer of " +
                                 directory.file("grown") + " (gpt2 encoder.json+vocab.bpe (sha256 ";
    EXPECT_EQ(refused.rfind(expected, 0), 0u) << refused;
    EXPECT_EQ(shard_hashes(directory.file("grown")), after);

    PrepareOptions stopped = options({first, second}, "stopped");
    stopped.stop_requested = [&] { return fs::exists(directory.file("stopped/shard-000001.h5")); };
    EXPECT_NE(error_of([&] { run_prepare(stopped); }).find("2 complete shards are kept"), std::string::npos);
    EXPECT_TRUE(fs::exists(directory.file("stopped/vocab.bpe")));
    EXPECT_FALSE(fs::exists(directory.file("stopped/index.json")));
    stopped.stop_requested = nullptr;
    stopped.resume = true;
    const PrepareResult resumed = run_prepare(stopped);
    EXPECT_GT(resumed.resumed_at_document, 0);
    EXPECT_EQ(shard_hashes(directory.file("stopped")), shard_hashes(once.dataset_path));
}

// GPT-2's files reused from the output folder itself are inputs, not outputs: a run stopped
// before its first shard removes what it wrote and leaves them.
TEST_F(Gpt2PipelineTest, FilesReusedInTheOutputFolderOutliveAnUndoneRun) {
    const TempDirectory directory;
    const std::string folder = directory.file("data");
    fs::create_directories(folder);
    for (const std::string& file : gpt2_tokenizer().files())
        fs::copy_file(file, fs::path(folder) / fs::path(file).filename());
    PrepareOptions options = testing_support::tiny_prepare_options(directory_->file("corpus"), folder, 0);
    options.tokenizer_path = folder;
    options.tokenizer_kind = TokenizerKind::gpt2;
    options.stop_requested = [&] { return fs::exists(folder + "/progress.json"); };
    EXPECT_NE(error_of([&] { run_prepare(options); }).find("stopped by a signal"), std::string::npos);
    EXPECT_FALSE(fs::exists(folder + "/progress.json"));
    for (const std::string& file : gpt2_tokenizer().files()) {
        const fs::path kept = fs::path(folder) / fs::path(file).filename();
        ASSERT_TRUE(fs::exists(kept)) << kept;
        EXPECT_EQ(sha256_file_hex(kept.string()), sha256_file_hex(file)) << kept;
    }
}

TEST_F(Gpt2PipelineTest, TrainingEvalAndSampleRunOnTheDataset) {
    const EvalReport report = evaluate(run());
    EXPECT_GT(report.totals.tokens, 0);
    EXPECT_TRUE(std::isfinite(report.mean_loss));
    EXPECT_LT(report.mean_loss, std::log(50257.0) + 1.0);  // two steps from a random start
    EXPECT_GT(report.bits_per_byte, 0);

    EvalOptions text_eval;
    text_eval.checkpoint = run();
    text_eval.text_inputs = {directory_->file("text/hand100.txt")};
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
