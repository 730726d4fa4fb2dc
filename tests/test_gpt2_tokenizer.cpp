// GPT-2's tokenizer (tokenizer/gpt2_*.h): ids identical to OpenAI's tiktoken on the committed
// fixture (hand-written documents and every KJV chapter), lossless round trips of arbitrary
// bytes, the tiktoken rank file against OpenAI's published hash, and one-line errors for broken
// files.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "core/sha256.h"
#include "tests/test_gpt2_support.h"
#include "tests/test_support.h"
#include "tokenizer/gpt2_pretokenizer.h"
#include "tokenizer/gpt2_tokenizer.h"
#include "tokenizer/kjv_corpus.h"

namespace mixgpt {
namespace {

using test::error_of;
using test::TempDirectory;
using testing::gpt2_reference;
using testing::gpt2_tokenizer;

TEST(Gpt2Tokenizer, IdsEqualTheReferenceOnHandWrittenDocuments) {
    const Tokenizer& tokenizer = gpt2_tokenizer();
    ASSERT_GT(gpt2_reference().documents.size(), 20u);
    for (const auto& [text, ids] : gpt2_reference().documents) {
        EXPECT_EQ(tokenizer.encode(text), ids) << text;
        EXPECT_EQ(tokenizer.decode(ids), text);
    }
}

TEST(Gpt2Tokenizer, IdsEqualTheReferenceOnEveryKjvChapter) {
    std::vector<std::string> chapters;
    try {
        chapters = kjv_chapters();
    } catch (const Error& error) {
        GTEST_SKIP() << error.what();
    }
    std::string text;
    for (const std::string& chapter : chapters) text += chapter;
    if (sha256_hex(text.data(), text.size()) != gpt2_reference().kjv_text_sha256)
        GTEST_SKIP() << "this machine's bible-kjv text differs from the one the fixture was made from";
    ASSERT_EQ(chapters.size(), gpt2_reference().kjv_chapters.size());
    const auto encoder = gpt2_tokenizer().make_encoder();
    int differing = 0;
    for (size_t c = 0; c < chapters.size(); ++c) {
        std::vector<int32_t> ids;
        encoder->encode(chapters[c], ids);
        const std::string ids_text = testing::ids_text(ids);
        const auto& [count, sha] = gpt2_reference().kjv_chapters[c];
        if (static_cast<int64_t>(ids.size()) == count && sha256_hex(ids_text.data(), ids_text.size()) == sha)
            continue;
        if (++differing <= 3)
            ADD_FAILURE() << "chapter " << c << ": " << ids.size() << " tokens, the reference " << count
                          << " (see scripts/check_gpt2_tokenizer.sh)";
    }
    EXPECT_EQ(differing, 0);
}

TEST(Gpt2Tokenizer, RoundTripsArbitraryBytesAndCountsInvalidUtf8) {
    const Tokenizer& tokenizer = gpt2_tokenizer();
    std::mt19937 random(5);
    // Random bytes, and random mixes of the pieces the pre-tokenizer distinguishes.
    const std::vector<std::string> pieces = {" ",
                                             "  ",
                                             "\n",
                                             "\t",
                                             "\r\n",
                                             "\xC2\xA0",
                                             "\xE3\x80\x80",
                                             "'s",
                                             "'",
                                             "a",
                                             "Z",
                                             "\xC3\xA9",
                                             "\xE6\xBC\xA2",
                                             "7",
                                             "\xC2\xBD",
                                             ".",
                                             "!",
                                             "\xF0\x9F\x98\x80",
                                             "\xCC\x81",
                                             "\x80",
                                             "\xFF",
                                             "\xE6\x9C",
                                             "\0"};
    for (int trial = 0; trial < 200; ++trial) {
        std::string text;
        const int length = static_cast<int>(random() % 300);
        for (int i = 0; i < length; ++i) {
            if (trial % 2 == 0) {
                text += static_cast<char>(random() % 256);
            } else {
                const std::string& piece = pieces[random() % pieces.size()];
                text += piece.empty() ? std::string(1, '\0') : piece;
            }
        }
        EXPECT_EQ(tokenizer.decode(tokenizer.encode(text)), text) << "trial " << trial;
        std::string_view piece;
        Gpt2PreTokenizer split(text);
        std::string joined;
        while (split.next(piece)) {
            EXPECT_FALSE(piece.empty());
            joined += piece;
        }
        EXPECT_EQ(joined, text);
    }
    // A lone continuation byte, a truncated 3-byte sequence, an overlong '/', a surrogate.
    const std::string text = "ok \x80 then \xE6\x9C end \xC0\xAF and \xED\xA0\x80 done";
    std::vector<int32_t> ids;
    EXPECT_EQ(tokenizer.make_encoder()->encode(text, ids), 1u + 2u + 2u + 3u);
    EXPECT_EQ(tokenizer.decode(ids), text);
    // Pieces far longer than the cache keys: 256 KB of spaces, of letters, of digits.
    for (char c : {' ', 'a', '7'}) {
        const std::string long_run(size_t{1} << 18, c);
        EXPECT_EQ(tokenizer.decode(tokenizer.encode(long_run)), long_run);
    }
}

TEST(Gpt2Tokenizer, VocabularyEndOfTextAndIdentity) {
    const Tokenizer& tokenizer = gpt2_tokenizer();
    EXPECT_EQ(tokenizer.kind(), TokenizerKind::gpt2);
    EXPECT_EQ(tokenizer.vocab_size(), 50257);
    EXPECT_EQ(tokenizer.eot_id(), 50256);
    EXPECT_EQ(tokenizer.unk_id(), -1);
    EXPECT_EQ(tokenizer.decode({tokenizer.eot_id()}), "<|endoftext|>");
    const std::vector<int32_t> ids = tokenizer.encode("a <|endoftext|> b");
    EXPECT_EQ(std::count(ids.begin(), ids.end(), tokenizer.eot_id()), 0);
    EXPECT_EQ(gpt2_model(tokenizer)->vocabulary().merges.size(), 50000u);
    ASSERT_EQ(tokenizer.files().size(), 2u);
    EXPECT_EQ(std::filesystem::path(tokenizer.files()[0]).filename(), "encoder.json");
    EXPECT_EQ(std::filesystem::path(tokenizer.files()[1]).filename(), "vocab.bpe");
    // Any of the files names the same tokenizer.
    for (const char* name : {"encoder.json", "vocab.bpe"}) {
        const Tokenizer again = Tokenizer::load(testing::gpt2_files_directory() + "/" + name);
        EXPECT_EQ(again.sha256(), tokenizer.sha256());
        EXPECT_EQ(again.path(), tokenizer.files()[0]);
    }
    const std::string canonical = canonical_gpt2_text(gpt2_model(tokenizer)->vocabulary());
    EXPECT_EQ(tokenizer.sha256(), sha256_hex(canonical.data(), canonical.size()));
}

std::string base64(const std::string& bytes) {
    static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string text;
    for (size_t i = 0; i < bytes.size(); i += 3) {
        uint32_t group = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
        if (i + 1 < bytes.size())
            group |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
        if (i + 2 < bytes.size()) group |= static_cast<unsigned char>(bytes[i + 2]);
        for (size_t k = 0; k < 4; ++k)
            text += i + k <= bytes.size() ? kAlphabet[(group >> (18 - 6 * k)) & 63] : '=';
    }
    return text;
}

// The ranks written from encoder.json's tokens are OpenAI's r50k_base.tiktoken byte for byte,
// and the tokenizer read from them (merges rebuilt from the ranks) is the same tokenizer.
TEST(Gpt2Tokenizer, TiktokenRankFileGivesTheSameTokenizer) {
    const Gpt2Vocabulary& vocabulary = gpt2_model(gpt2_tokenizer())->vocabulary();
    std::string ranks;
    for (int32_t id = 0; id < vocabulary.eot_id; ++id)
        ranks += base64(vocabulary.tokens[static_cast<size_t>(id)]) + " " + std::to_string(id) + "\n";
    EXPECT_EQ(sha256_hex(ranks.data(), ranks.size()), gpt2_reference().r50k_base_sha256);
    const TempDirectory directory;
    const Tokenizer from_ranks = Tokenizer::load(directory.write("r50k_base.tiktoken", ranks));
    EXPECT_EQ(from_ranks.kind(), TokenizerKind::gpt2);
    EXPECT_EQ(from_ranks.vocab_size(), 50257);
    EXPECT_EQ(from_ranks.eot_id(), 50256);
    EXPECT_TRUE(gpt2_model(from_ranks)->vocabulary().merges == vocabulary.merges);
    EXPECT_EQ(from_ranks.sha256(), gpt2_tokenizer().sha256());
    for (const auto& [text, ids] : gpt2_reference().documents)
        EXPECT_EQ(from_ranks.encode(text), ids) << text;
    EXPECT_EQ(Tokenizer::load(directory.path()).sha256(), gpt2_tokenizer().sha256());  // found in the folder
}

// A small byte-level vocabulary: the 256 bytes in order, then "ab" and "abc", then <|endoftext|>.
struct SmallFiles {
    std::string vocab_json, merges;
};

std::string alphabet(unsigned char byte) {
    std::string text;
    int extra = 0;
    for (int b = 0; b <= byte; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        if (!printable && b < byte) ++extra;
    }
    const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    const unsigned code = printable ? byte : 256u + static_cast<unsigned>(extra);
    if (code < 0x80) return std::string(1, static_cast<char>(code));
    text += static_cast<char>(0xC0 | (code >> 6));
    text += static_cast<char>(0x80 | (code & 0x3F));
    return text;
}

SmallFiles small_files() {
    SmallFiles files;
    std::string json = "{";
    for (int byte = 0; byte < 256; ++byte) {
        std::string key = alphabet(static_cast<unsigned char>(byte));
        if (key == "\"" || key == "\\") key = "\\" + key;
        json += "\"" + key + "\": " + std::to_string(byte) + ", ";
    }
    files.vocab_json = json + "\"ab\": 256, \"abc\": 257, \"<|endoftext|>\": 258}";
    files.merges = "#version: 0.2\na b\nab c\n";
    return files;
}

TEST(Gpt2Files, ReadsASmallVocabularyAndRefusesBrokenFilesInOneLine) {
    const TempDirectory directory;
    const SmallFiles good = small_files();
    directory.write("good/vocab.json", good.vocab_json);
    directory.write("good/merges.txt", good.merges);
    const Tokenizer small = Tokenizer::load(directory.file("good"));
    EXPECT_EQ(small.vocab_size(), 259);
    // One piece; a+b (rank 0) joins both pairs before ab+c (rank 1): x ab c ab, then x abc ab.
    EXPECT_EQ(small.encode("xabcab"), (std::vector<int32_t>{'x', 257, 256}));
    const auto error_for = [&](const std::string& name, const std::string& vocab_json,
                               const std::string& merges) {
        directory.write(name + "/vocab.json", vocab_json);
        directory.write(name + "/merges.txt", merges);
        const std::string message = error_of([&] { Tokenizer::load(directory.file(name)); });
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        return message;
    };
    EXPECT_NE(error_for("json", "{\"a\": ", good.merges).find("vocab.json: not JSON"), std::string::npos);
    std::string no_eot = good.vocab_json;
    no_eot.replace(no_eot.find("<|endoftext|>"), 13, "<|end|>");
    EXPECT_NE(error_for("eot", no_eot, good.merges).find("vocab.json: no <|endoftext|> token"),
              std::string::npos);
    EXPECT_NE(error_for("ids", "{\"a\": 3}", good.merges).find("has id 3 (ids must be 0 .. size - 1"),
              std::string::npos);
    EXPECT_NE(error_for("bytes", "{\"a\": 0}", "#version: 0.2\n").find("no token for the byte 0x00"),
              std::string::npos);
    EXPECT_NE(error_for("unknown", good.vocab_json, "#version: 0.2\na xyz\n")
                  .find("merges.txt:2: merge 'a xyz' joins a token that is not in the vocabulary"),
              std::string::npos);
    EXPECT_NE(error_for("result", good.vocab_json, "#version: 0.2\na z\n")
                  .find("merges.txt: merge 0 makes a token that is not in the vocabulary"),
              std::string::npos);
    EXPECT_NE(error_for("order", good.vocab_json, "#version: 0.2\nab c\na b\n")
                  .find("merge 0 uses a token that no earlier merge makes"),
              std::string::npos);
    EXPECT_NE(error_for("shape", good.vocab_json, "#version: 0.2\na b c\n")
                  .find("merges.txt:2: expected two tokens"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  Tokenizer::load(directory.write("lone/encoder.json", good.vocab_json));
              }).find("encoder.json and vocab.bpe must lie side by side"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  Tokenizer::load(directory.write("bad.tiktoken", "IQ== 0\n!!!! 1\n"));
              }).find("bad.tiktoken:2: '!!!!' is not base64"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  Tokenizer::load(directory.write("gap.tiktoken", "IQ== 0\nIg== 2\n"));
              }).find("gap.tiktoken: rank 1 is missing"),
              std::string::npos);
    directory.write("empty_dir/readme.txt", "");
    EXPECT_NE(
        error_of([&] { Tokenizer::load(directory.file("empty_dir")); }).find("no GPT-2 tokenizer files"),
        std::string::npos);
}

}  // namespace
}  // namespace mixgpt
