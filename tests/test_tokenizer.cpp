// The tokenizer (tokenizer/tokenizer.h, encoder.h, tokenizer_trainer.h, utf8.h):
// lossless round trips, agreement with SentencePiece, special tokens and the
// errors of bad models and vocabulary sizes.
#include <gtest/gtest.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <random>

#include "core/error.h"
#include "core/sha256.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"
#include "tokenizer/encoder.h"
#include "tokenizer/kjv_corpus.h"
#include "tokenizer/tokenizer_trainer.h"
#include "tokenizer/utf8.h"

namespace mixgpt {
namespace {

using test::TempDirectory;
using testing::multilingual_documents;
using testing::tiny_tokenizer;

// An independent UTF-8 decoder for the test: replaces each maximal invalid
// subpart with U+FFFD, as Python's bytes.decode("utf-8", "replace") does.
std::string decode_with_replacement(const std::string& bytes) {
    std::string text;
    size_t i = 0;
    while (i < bytes.size()) {
        const auto lead = static_cast<unsigned char>(bytes[i]);
        int length = lead < 0x80                    ? 1
                     : lead >= 0xC2 && lead <= 0xDF ? 2
                     : lead >= 0xE0 && lead <= 0xEF ? 3
                     : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                    : 0;
        int valid = length > 0 ? 1 : 0;
        for (int k = 1; k < length && i + k < bytes.size(); ++k) {
            const auto next = static_cast<unsigned char>(bytes[i + k]);
            unsigned char low = 0x80, high = 0xBF;
            if (k == 1 && lead == 0xE0) low = 0xA0;
            if (k == 1 && lead == 0xED) high = 0x9F;
            if (k == 1 && lead == 0xF0) low = 0x90;
            if (k == 1 && lead == 0xF4) high = 0x8F;
            if (next < low || next > high) break;
            ++valid;
        }
        if (length > 0 && valid == length) {
            text.append(bytes, i, static_cast<size_t>(length));
            i += static_cast<size_t>(length);
        } else {
            text += "\xEF\xBF\xBD";
            i += static_cast<size_t>(std::max(valid, 1));
        }
    }
    return text;
}

std::string random_bytes(size_t count, uint32_t seed) {
    std::mt19937 random(seed);
    std::string bytes(count, '\0');
    for (char& byte : bytes) byte = static_cast<char>(random() & 0xFF);
    return bytes;
}

TEST(TokenizerRoundTrip, RandomBytesDecodedWithReplacement) {
    const Tokenizer& tokenizer = tiny_tokenizer();
    for (uint32_t seed = 0; seed < 20; ++seed) {
        const std::string text = decode_with_replacement(random_bytes(2000, seed));
        ASSERT_EQ(utf8::valid_prefix_length(text.data(), text.size()), text.size());
        EXPECT_EQ(tokenizer.decode(tokenizer.encode(text)), text) << "seed " << seed;
    }
}

TEST(TokenizerRoundTrip, InvalidUtf8BytesAreKeptAndCounted) {
    const Tokenizer& tokenizer = tiny_tokenizer();
    for (uint32_t seed = 0; seed < 20; ++seed) {
        const std::string bytes = random_bytes(2000, seed);
        EXPECT_EQ(tokenizer.decode(tokenizer.encode(bytes)), bytes) << "seed " << seed;
    }
    // A lone continuation byte, a truncated 3-byte sequence, an overlong '/', a surrogate.
    const std::string text = "ok \x80 then \xE6\x9C end \xC0\xAF and \xED\xA0\x80 done";
    std::vector<int32_t> ids;
    EXPECT_EQ(tokenizer.make_encoder()->encode(text, ids), 1u + 2u + 2u + 3u);
    EXPECT_EQ(tokenizer.decode(ids), text);
}

TEST(TokenizerRoundTrip, MultilingualTextWithEmojiAndCombiningMarks) {
    const Tokenizer& tokenizer = tiny_tokenizer();
    for (const std::string& document : multilingual_documents(30, 7))
        EXPECT_EQ(tokenizer.decode(tokenizer.encode(document)), document);
    // Scripts, emoji sequences (skin tone, ZWJ, flags), stacked combining marks,
    // whitespace runs, CRLF, a NUL byte and a noncharacter, mostly unseen in training.
    static const char kText[] =
        "漢字かなカナ한글 🧑🏾‍🚀 🏳️‍🌈 \xF0\x9F\x87\xAF\xF0\x9F\x87\xB5 q\xCC\x83\xCC\x81 ∮ "
        "E⋅da "
        "= Q, "
        "  leading and trailing spaces  \t\ttabs\r\nCRLF\n\n\nblank lines, a NUL \0 byte, U+FFFF "
        "\xEF\xBF\xBF ";
    const std::string text(kText, sizeof kText - 1);
    EXPECT_EQ(tokenizer.decode(tokenizer.encode(text)), text);
    EXPECT_TRUE(tokenizer.encode("").empty());
}

TEST(TokenizerRoundTrip, KingJamesBible) {
    std::vector<std::string> chapters;
    try {
        chapters = kjv_chapters();
    } catch (const Error& error) {
        GTEST_SKIP() << error.what();
    }
    std::string text;
    for (const std::string& chapter : chapters) text += chapter;
    const Tokenizer& tokenizer = tiny_tokenizer();
    EXPECT_EQ(tokenizer.decode(tokenizer.encode(text)), text);
}

// The Encoder's unit-by-unit, cached encoding must equal SentencePiece's own
// encoding of whole lines.
TEST(TokenizerEncoder, MatchesSentencePieceOnWholeLines) {
    sentencepiece::SentencePieceProcessor processor;
    ASSERT_TRUE(processor.Load(testing::tiny_tokenizer_path()).ok());
    const Tokenizer& tokenizer = tiny_tokenizer();
    Encoder small_cache(sentencepiece_model(tokenizer), 4);
    size_t lines = 0;
    for (const std::string& document : multilingual_documents(40, 3)) {
        size_t start = 0;
        while (start < document.size()) {
            const size_t end = std::min(document.find('\n', start), document.size());
            const std::string line = document.substr(start, end - start);
            start = end + 1;
            std::vector<int> expected;
            ASSERT_TRUE(processor.Encode(line, &expected).ok());
            std::vector<int32_t> cached;
            small_cache.encode(line, cached);
            EXPECT_EQ(tokenizer.encode(line), std::vector<int32_t>(expected.begin(), expected.end())) << line;
            EXPECT_EQ(cached, std::vector<int32_t>(expected.begin(), expected.end())) << line;
            ++lines;
        }
    }
    EXPECT_GT(lines, 200u);
}

TEST(TokenizerSpecialTokens, EndOfTextIsNeverProducedFromText) {
    const Tokenizer& tokenizer = tiny_tokenizer();
    const std::string text = "before <|endoftext|> after";
    const std::vector<int32_t> ids = tokenizer.encode(text);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), tokenizer.eot_id()), 0);
    EXPECT_EQ(tokenizer.decode(ids), text);
    EXPECT_EQ(tokenizer.decode({tokenizer.eot_id()}), "<|endoftext|>");
    for (int byte = 0; byte < 256; ++byte)
        EXPECT_EQ(
            tokenizer.surface(sentencepiece_model(tokenizer)->byte_id(static_cast<unsigned char>(byte))),
            std::string(1, static_cast<char>(byte)));
}

TEST(TokenizerSpecialTokens, ShaIsTheModelFilesHash) {
    EXPECT_EQ(tiny_tokenizer().sha256(), sha256_file_hex(testing::tiny_tokenizer_path()));
    EXPECT_EQ(tiny_tokenizer().vocab_size(), 500);
}

TEST(TokenizerSpecialTokens, DecodeRejectsIdsOutsideTheVocabulary) {
    EXPECT_THROW(tiny_tokenizer().decode({0, 500}), Error);
    EXPECT_THROW(tiny_tokenizer().decode({-1}), Error);
}

TEST(TokenizerTrainer, UnigramModelsAreLosslessToo) {
    TempDirectory directory;
    TrainingSample sample;
    for (const std::string& document : multilingual_documents(40, 2)) sample.add_text(document);
    TokenizerTrainingOptions options;
    options.model_type = TokenizerModelType::unigram;
    options.vocab_size = 450;
    const std::string path = directory.write("unigram.model", train_tokenizer(sample, options));
    const Tokenizer tokenizer = Tokenizer::load(path);
    EXPECT_EQ(tokenizer.vocab_size(), 450);
    for (const std::string& document : multilingual_documents(10, 9))
        EXPECT_EQ(tokenizer.decode(tokenizer.encode(document)), document);
}

TEST(TokenizerTrainer, SplitsLongLinesIntoSentences) {
    TrainingSample sample;
    std::string line;
    while (line.size() < 3 * TrainingSample::kMaxSentenceBytes) line += "word ";
    sample.add_text("short\n\n" + line + "\nlast");
    ASSERT_EQ(sample.sentences().size(), 2u + 3u + 1u);
    for (const std::string& sentence : sample.sentences())
        EXPECT_LE(sentence.size(), TrainingSample::kMaxSentenceBytes);
    EXPECT_EQ(sample.bytes(), 5u + line.size() + 4u);
}

TEST(TokenizerTrainer, VocabularySizesThatDoNotFitAreExplained) {
    TrainingSample sample;
    for (const std::string& document : multilingual_documents(20, 4)) sample.add_text(document);
    TokenizerTrainingOptions options;
    options.vocab_size = 270;
    try {
        train_tokenizer(sample, options);
        FAIL() << "expected an error";
    } catch (const Error& error) {
        EXPECT_NE(std::string(error.what()).find("vocabulary size 270 is too small"), std::string::npos)
            << error.what();
    }
    options.vocab_size = 60000;
    try {
        train_tokenizer(sample, options);
        FAIL() << "expected an error";
    } catch (const Error& error) {
        EXPECT_NE(std::string(error.what()).find("vocabulary size 60000 is too large"), std::string::npos)
            << error.what();
    }
    EXPECT_THROW(train_tokenizer(TrainingSample{}, options), Error);
}

std::string train_with_sentencepiece(int vocab_size, const std::string& extra_arguments) {
    TrainingSample sample;
    for (const std::string& document : multilingual_documents(40, 5)) sample.add_text(document);
    struct Sentences : sentencepiece::SentenceIterator {
        const std::vector<std::string>& lines;
        size_t next = 0;
        explicit Sentences(const std::vector<std::string>& all) : lines(all) {}
        bool done() const override { return next >= lines.size(); }
        void Next() override { ++next; }
        const std::string& value() const override { return lines[next]; }
        sentencepiece::util::Status status() const override { return {}; }
    } sentences(sample.sentences());
    std::string model;
    const auto status = sentencepiece::SentencePieceTrainer::Train(
        "--vocab_size=" + std::to_string(vocab_size) + " --minloglevel=2 --control_symbols=<|endoftext|> " +
            extra_arguments,
        &sentences, &model);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return model;
}

void expect_load_error(const std::string& path, const std::string& fragment) {
    try {
        Tokenizer::load(path);
        FAIL() << "expected an error loading " << path;
    } catch (const Error& error) {
        const std::string message = error.what();
        EXPECT_EQ(message.rfind(path, 0), 0u) << message;
        EXPECT_NE(message.find(fragment), std::string::npos) << message;
    }
}

TEST(TokenizerLoad, RejectsMissingGarbageAndLossyModels) {
    TempDirectory directory;
    expect_load_error(directory.file("missing.model"), "cannot open");
    expect_load_error(directory.write("garbage.model", "not a model"), "not a SentencePiece model");
    expect_load_error(
        directory.write(
            "no_bytes.model",
            train_with_sentencepiece(300, "--normalization_rule_name=identity --add_dummy_prefix=false")),
        "no byte-fallback tokens");
    expect_load_error(directory.write("nfkc.model", train_with_sentencepiece(500, "--byte_fallback=true")),
                      "normalization is lossy");
    expect_load_error(
        directory.write("no_split.model",
                        train_with_sentencepiece(500,
                                                 "--byte_fallback=true --normalization_rule_name=identity "
                                                 "--add_dummy_prefix=false --remove_extra_whitespaces=false "
                                                 "--split_by_whitespace=false")),
        "spans a word boundary");
}

}  // namespace
}  // namespace mixgpt
