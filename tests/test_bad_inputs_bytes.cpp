// Bad input, bytes family (issue 36): mixgpt takes no bytes it cannot vouch for. A corpus input is
// judged as text over all of it, not its first 64 KiB; a gzip input ends where its gzip data
// ends; the tokenizer sample is the size asked for; GPT-2 files cut short are refused; a
// dataset's index must agree with its tokenizer, and its shards with their checksums.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "tests/bad_inputs_support.h"
#include "tests/test_gpt2_support.h"
#include "tests/test_tokenizer_support.h"

namespace mixgpt {
namespace {

using namespace test;
namespace fs = std::filesystem;

// `bytes` bytes of ASCII lines.
std::string text_lines(size_t bytes) {
    std::string text;
    for (int i = 0; text.size() < bytes; ++i) text += "line " + std::to_string(i) + " of a plain text\n";
    text.resize(bytes - 1);
    return text + "\n";
}

std::string random_bytes(size_t count) {
    std::mt19937 random(11);
    std::string bytes(count, '\0');
    for (char& byte : bytes) byte = static_cast<char>(random() & 0xff);
    return bytes;
}

// French in Latin-1, not UTF-8: 2 of every 21 bytes (9.5%) are not valid UTF-8.
std::string latin1_text(size_t bytes) {
    std::string text;
    while (text.size() < bytes) text += "Le gar\xe7on a mang\xe9 et ";
    return text;
}

// Flips the lowest bit of the first train token of `shard`, found by its bytes in the file.
void flip_first_token(const std::string& shard) {
    const std::vector<int32_t> tokens = testing::read_tokens(shard, "train");
    ASSERT_GE(tokens.size(), 64u);
    std::string pattern;
    for (size_t i = 0; i < 64; ++i)
        pattern += std::string{static_cast<char>(tokens[i] & 0xff), static_cast<char>(tokens[i] >> 8)};
    std::string bytes = testing::read_file(shard);
    const size_t at = bytes.find(pattern);
    ASSERT_NE(at, std::string::npos);
    bytes[at] = static_cast<char>(bytes[at] ^ 1);
    std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
}

class BadBytesTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        fixture_ = make_bad_input_fixture("mixgpt_bad_bytes").release();
        const TempDirectory& d = *fixture_;
        d.write("random_after_head.txt", text_lines(70000) + random_bytes(300000));
        d.write("nuls_after_head.txt", text_lines(70000) + std::string(100000, '\0'));
        d.write("latin1.txt", latin1_text(200000));
        testing::write_gzip(d.file("joined.jsonl.gz"), "{\"text\": \"compressed\"}\n");
        std::ofstream(d.file("joined.jsonl.gz"), std::ios::binary | std::ios::app)
            << "{\"text\": \"a plain line after the gzip member\"}\n";
        const std::string gpt2 = testing::gpt2_files_directory();
        const std::string merges = testing::read_file(gpt2 + "/vocab.bpe");
        const size_t version_end = merges.find('\n') + 1;
        size_t half = version_end;
        for (int line = 0; line < 25000; ++line) half = merges.find('\n', half) + 1;
        for (const auto& [folder, kept] :
             {std::pair<const char*, size_t>{"gpt2_half", half}, {"gpt2_version", version_end}}) {
            fs::create_directories(d.file(folder));
            fs::copy(gpt2 + "/encoder.json", d.file(std::string(folder) + "/encoder.json"));
            d.write(std::string(folder) + "/vocab.bpe", merges.substr(0, kept));
        }
        fs::copy(d.file("data"), d.file("flipped"), fs::copy_options::recursive);
        flip_first_token(d.file("flipped/shard-000000.h5"));
        fs::copy(d.file("data"), d.file("wide_vocab"), fs::copy_options::recursive);
        nlohmann::json index = nlohmann::json::parse(testing::read_file(d.file("wide_vocab/index.json")));
        index["vocab_size"] = 70000;
        d.write("wide_vocab/index.json", index.dump(2));
    }
    static void TearDownTestSuite() {
        delete fixture_;
        fixture_ = nullptr;
    }

    static inline TempDirectory* fixture_ = nullptr;
    BadInputRunner runner_{*fixture_};
};

// prepare with a given tokenizer (the fixture's: no tokenizer training), into `output`.
std::vector<std::string> prepare_of(const std::string& input, const std::string& output,
                                    const std::string& tokenizer = "{DATA}/tokenizer.model") {
    return {"prepare",        "--output", output,      "--tokenizer", tokenizer,
            "--val-fraction", "0",        "--threads", "1",           input};
}

std::vector<BadInput> bytes_cases() {
    return {
        // Binary detection read the first 64 KiB only: what came after was tokenized.
        {"prepare: random bytes after a text head",
         prepare_of("{D}/random_after_head.txt", "{D}/out_random"),
         1,
         {"{D}/random_after_head.txt: byte 7", "not text", "--skip-binary"}},
        {"prepare: NUL bytes after a text head",
         prepare_of("{D}/nuls_after_head.txt", "{D}/out_nuls"),
         1,
         {"{D}/nuls_after_head.txt: byte 70000:", "NUL"}},
        {"prepare: Latin-1 text (9.5% of its bytes not UTF-8)",
         prepare_of("{D}/latin1.txt", "{D}/out_latin1"),
         1,
         {"{D}/latin1.txt: byte ", "not valid UTF-8"}},
        // Plain lines after a gzip member were dropped without a word.
        {"prepare: plain lines after a gzip member",
         prepare_of("{D}/joined.jsonl.gz", "{D}/out_joined"),
         1,
         {"{D}/joined.jsonl.gz: byte ", "after the end of the gzip data"}},
        // GPT-2 files cut short were taken for GPT-2's 50257 tokens.
        {"prepare: vocab.bpe cut to half its merges",
         prepare_of("{D}/corpus", "{D}/out_half", "{D}/gpt2_half"),
         1,
         {"{D}/gpt2_half/vocab.bpe", "merges"}},
        {"prepare: vocab.bpe cut to its version line",
         prepare_of("{D}/corpus", "{D}/out_version", "{D}/gpt2_version"),
         1,
         {"{D}/gpt2_version/vocab.bpe", "merges"}},
        // A shard's SHA-256 in index.json was never checked: bit-flipped tokens were trained on.
        {"eval: a bit-flipped token in a shard",
         {"eval", "{D}/run", "--dataset", "{D}/flipped", "--split", "train", "--threads", "1"},
         1,
         {"{D}/flipped/shard-000000.h5", "SHA-256", "index.json"}},
        {"train --verify-data: a bit-flipped token in a shard",
         train_with({"--dataset", "{D}/flipped", "--verify-data"}, "{D}/run_flipped"),
         1,
         {"{D}/flipped/shard-000000.h5", "SHA-256", "index.json"}},
        // index.json's vocab_size was believed over the tokenizer's 300 tokens.
        {"train: index.json's vocab_size over a smaller tokenizer",
         train_with({"--dataset", "{D}/wide_vocab"}, "{D}/run_wide"),
         1,
         {"{D}/wide_vocab/index.json: vocab_size", "70000", "300"}},
    };
}

TEST_F(BadBytesTest, Cases) {
    for (const BadInput& bad : bytes_cases()) runner_.check(bad);
}

// train without --verify-data checks a shard when it first reads it: the run stops at step 0,
// before any checkpoint.
TEST_F(BadBytesTest, TrainStopsAtTheFirstReadOfABitFlippedShard) {
    TempDirectory scratch("mixgpt_bytes_flipped");
    const Outcome outcome = runner_.run(train_with({"--dataset", "{D}/flipped"}, scratch.file("run")));
    EXPECT_EQ(outcome.exit_status, 1) << outcome.err;
    std::string line;
    EXPECT_TRUE(is_one_error_line(outcome.err, line));
    EXPECT_NE(line.find(fixture_->file("flipped/shard-000000.h5") + ": SHA-256 "), std::string::npos) << line;
    EXPECT_FALSE(fs::exists(scratch.file("run/checkpoints/step_00000002.h5")));
}

// --skip-binary left inputs binary in their first 64 KiB only; one binary further on was read.
TEST_F(BadBytesTest, SkipBinaryLeavesAnInputBinaryAfterItsHead) {
    TempDirectory scratch("mixgpt_bytes_skip");
    std::vector<std::string> arguments = prepare_of("{D}/corpus", scratch.file("out"));
    arguments.insert(arguments.end(), {"{D}/nuls_after_head.txt", "--skip-binary"});
    const Outcome outcome = runner_.run(arguments);
    ASSERT_EQ(outcome.exit_status, 0) << outcome.err;
    EXPECT_NE(outcome.err.find(fixture_->file("nuls_after_head.txt") + " (binary: "), std::string::npos)
        << outcome.err;
    EXPECT_NE(outcome.err.find("byte 70000"), std::string::npos) << outcome.err;
    EXPECT_NE(outcome.err.find("took 3 files"), std::string::npos) << outcome.err;
}

// One JSON line of 3 MB with --tokenizer-sample-bytes 200000: the tokenizer trained on all 3 MB.
TEST_F(BadBytesTest, TokenizerSampleHonoursItsSizeOverALongLine) {
    TempDirectory scratch("mixgpt_bytes_sample");
    std::mt19937 random(3);
    std::string text;
    static const char* const kWords[] = {"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "qu"};
    while (text.size() < 3'000'000) text += std::string(kWords[random() % 10]) + kWords[random() % 10] + " ";
    scratch.write("long.jsonl", nlohmann::json({{"text", text}}).dump() + "\n{\"text\": \"a short one\"}\n");
    const Outcome outcome = runner_.run({"prepare", "--output", scratch.file("out"), "--vocab-size", "300",
                                         "--tokenizer-sample-bytes", "200000", "--val-fraction", "0",
                                         "--threads", "1", scratch.file("long.jsonl")});
    ASSERT_EQ(outcome.exit_status, 0) << outcome.err;
    std::smatch trained;
    ASSERT_TRUE(std::regex_search(outcome.err, trained, std::regex(R"(tokenizer \(vocabulary 300\) on ([0-9.]+) MB)")))
        << outcome.err;
    EXPECT_LE(std::stod(trained[1].str()), 0.2) << outcome.err;
    EXPECT_GE(std::stod(trained[1].str()), 0.1) << outcome.err;  // the long line's start was taken
}

}  // namespace
}  // namespace mixgpt
