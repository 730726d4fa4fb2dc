// Corpus inputs (tokenizer/corpus.h, input_stream.h, decompressor.h, input_sniff.h): every
// compression and JSON-lines spelling gives the same documents; binary, truncated and
// not-JSON-lines inputs are refused in one line with nothing written; directories take
// text-like names only and say what they left; a corpus continues exactly from any
// document boundary it reported (prepare --resume).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"
#include "tokenizer/corpus.h"
#include "tokenizer/json_text_prefix.h"
#include "tokenizer/prepare.h"

namespace mixgpt {
namespace {

using test::TempDirectory;

struct Document {
    std::string text;
    int64_t number;
    bool operator==(const Document& other) const { return text == other.text && number == other.number; }
};

std::vector<Document> documents_of(Corpus& corpus, std::vector<CorpusPosition>* ends = nullptr) {
    std::vector<Document> documents;
    TextSegment segment;
    std::string text;
    while (corpus.next(segment)) {
        text += segment.text;
        if (!segment.last) continue;
        documents.push_back({text, segment.document});
        if (ends != nullptr) ends->push_back(segment.end);
        text.clear();
    }
    return documents;
}

std::vector<Document> read_corpus(const CorpusOptions& options) {
    Corpus corpus = Corpus::from_files(resolve_inputs(options).files, options);
    return documents_of(corpus);
}

CorpusOptions inputs(std::vector<std::string> paths) {
    CorpusOptions options;
    options.inputs = std::move(paths);
    return options;
}

const std::vector<std::string> kTexts = {"first document\nwith two lines\n", "second \xC3\xA9t\xC3\xA9\n",
                                         "third, the last"};

std::string jsonl() {
    std::string text;
    for (const std::string& document : kTexts) {
        std::string escaped;
        for (char c : document) escaped += c == '\n' ? std::string("\\n") : std::string(1, c);
        text += "{\"id\": 1, \"text\": \"" + escaped + "\"}\n";
    }
    return text;
}

std::string gzip_compressed(const TempDirectory& directory, const std::string& content) {
    const std::string path = directory.file("scratch.gz");
    testing::write_gzip(path, content);
    const std::string bytes = testing::read_file(path);
    std::filesystem::remove(path);
    return bytes;
}

TEST(CorpusInputs, EveryCompressionAndJsonLinesNameGivesTheSameDocuments) {
    TempDirectory directory;
    const std::string lines = jsonl();
    const std::vector<std::pair<std::string, std::string>> files = {
        {"a.jsonl", lines},
        {"b.jsonl.gz", gzip_compressed(directory, lines)},
        {"c.jsonl.zst", testing::zstd_compressed(lines)},
        {"d.ndjson.xz", testing::xz_compressed(lines)},
        {"e.json", lines},  // JSON lines by content
        {"f.json.zst",
         testing::zstd_compressed(lines.substr(0, 40)) + testing::zstd_compressed(lines.substr(40))},
        {"g.json.xz", testing::xz_compressed(lines)},
        {"h.jsonl.gz",
         gzip_compressed(directory, lines.substr(0, 50)) + gzip_compressed(directory, lines.substr(50))},
    };
    std::vector<Document> expected;
    for (size_t d = 0; d < kTexts.size(); ++d) expected.push_back({kTexts[d], static_cast<int64_t>(d)});
    for (const auto& [name, bytes] : files) {
        SCOPED_TRACE(name);
        EXPECT_EQ(read_corpus(inputs({directory.write(name, bytes)})), expected);
    }
    std::string text;
    for (const std::string& document : kTexts) text += document + "\n<DOC>\n";
    for (const auto& [name, bytes] :
         std::vector<std::pair<std::string, std::string>>{{"t.txt", text},
                                                          {"t.txt.zst", testing::zstd_compressed(text)},
                                                          {"t.txt.xz", testing::xz_compressed(text)}}) {
        SCOPED_TRACE(name);
        CorpusOptions options = inputs({directory.write(name, bytes)});
        options.doc_separator = "<DOC>";
        std::vector<Document> documents = read_corpus(options);
        ASSERT_EQ(documents.size(), 3u);
        for (size_t d = 0; d < 3; ++d) EXPECT_EQ(documents[d].text, kTexts[d] + "\n");
    }
}

// prepare fails with one line holding every fragment, and leaves nothing behind.
void expect_refused(const TempDirectory& directory, const CorpusOptions& corpus,
                    const std::vector<std::string>& fragments) {
    PrepareOptions options;
    options.corpus = corpus;
    options.output_directory = directory.file("out");
    options.tokenizer_path = testing::tiny_tokenizer_path();
    options.threads = 1;
    const std::string message = test::error_of([&] { run_prepare(options); });
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string& fragment : fragments)
        EXPECT_NE(message.find(fragment), std::string::npos) << message;
    EXPECT_FALSE(std::filesystem::exists(options.output_directory)) << message;
}

TEST(CorpusInputs, TruncatedBinaryAndNotJsonLinesInputsAreRefusedInOneLine) {
    TempDirectory directory;
    std::string long_text;
    for (int i = 0; long_text.size() < 300'000; ++i)
        long_text += "line " + std::to_string(i) + " of a text\n";
    const std::string zstd = testing::zstd_compressed(long_text), xz = testing::xz_compressed(long_text);
    const std::string cut_zstd = directory.write("cut.txt.zst", zstd.substr(0, zstd.size() / 2));
    expect_refused(directory, inputs({cut_zstd}), {cut_zstd + ": truncated zstd data"});
    const std::string cut_xz = directory.write("cut.txt.xz", xz.substr(0, xz.size() - 20));
    expect_refused(directory, inputs({cut_xz}), {cut_xz + ": truncated xz data"});

    const std::string parquet =
        directory.write("train-00000.parquet", std::string("PAR1\x15\x04\x15\x10", 8) + "PAR1");
    expect_refused(directory, inputs({parquet}),
                   {parquet + ": looks like a Parquet file", "parquet_to_jsonl.py"});
    const std::string elf = directory.write("program.txt", std::string("\x7f"
                                                                       "ELF\x02\x01\x01\0\0\0",
                                                                       10));
    expect_refused(directory, inputs({elf}), {elf, "ELF executable"});
    std::string noise;
    for (int i = 0; i < 4096; ++i) noise += static_cast<char>(0x80 + (i * 37) % 0x7f);
    const std::string random = directory.write("noise.txt", noise);
    expect_refused(directory, inputs({random}), {random, "not valid UTF-8"});
    const std::string pdf = directory.file("paper.txt.gz");
    testing::write_gzip(pdf, "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n");
    expect_refused(directory, inputs({pdf}), {pdf + ": looks like a PDF document"});
    const std::string pretty =
        directory.write("config.json", "{\n  \"text\": \"one object over lines\"\n}\n");
    expect_refused(directory, inputs({pretty}), {pretty + ": not JSON lines", "--format text"});

    directory.write("download/README.md", "# A dataset card\n");
    directory.write("download/.gitattributes", "*.parquet filter=lfs\n");
    expect_refused(directory, inputs({directory.file("download")}),
                   {"download: directory holds no text-like files"});

    CorpusOptions skipping = inputs({parquet, elf, directory.write("fine.txt", "some text\n")});
    skipping.skip_binary = true;
    const ResolvedInputs resolved = resolve_inputs(skipping);
    ASSERT_EQ(resolved.files.size(), 1u);
    ASSERT_EQ(resolved.left.size(), 2u);
    EXPECT_EQ(resolved.left[0].path, parquet);
    EXPECT_NE(resolved.left[0].reason.find("binary: a Parquet file"), std::string::npos);
}

TEST(CorpusInputs, DirectoriesTakeTextLikeNamesAndListWhatTheyLeave) {
    TempDirectory directory;
    directory.write("d/README.md", "# card\n");
    directory.write("d/.gitattributes", "x\n");
    directory.write("d/data/part-0.jsonl.zst", testing::zstd_compressed(jsonl()));
    directory.write("d/data/part-1.parquet", "PAR1");
    directory.write("d/notes.txt", "notes\n");
    CorpusOptions options = inputs({directory.file("d")});
    ResolvedInputs resolved = resolve_inputs(options);
    ASSERT_EQ(resolved.files.size(), 2u);
    EXPECT_EQ(resolved.files[0].path, directory.file("d/data/part-0.jsonl.zst"));
    EXPECT_EQ(resolved.files[0].format, InputFormat::jsonl);
    EXPECT_EQ(resolved.files[0].compression, Compression::zstd);
    EXPECT_EQ(resolved.files[1].path, directory.file("d/notes.txt"));
    std::vector<std::string> left;
    for (const LeftInput& input : resolved.left) left.push_back(input.path + " " + input.reason);
    std::sort(left.begin(), left.end());
    EXPECT_EQ(left,
              (std::vector<std::string>{directory.file("d/.gitattributes") + " hidden",
                                        directory.file("d/README.md") + " not a text-like name",
                                        directory.file("d/data/part-1.parquet") + " not a text-like name"}));
    const std::vector<std::string> lines = resolved.describe();
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_NE(lines[0].find("took 2 files"), std::string::npos) << lines[0];
    EXPECT_NE(lines[1].find("left 3"), std::string::npos) << lines[1];
    EXPECT_NE(lines[1].find("README.md (not a text-like name)"), std::string::npos) << lines[1];

    options.include = {"*.md"};
    resolved = resolve_inputs(options);
    ASSERT_EQ(resolved.files.size(), 3u);
    EXPECT_EQ(resolved.files[0].path, directory.file("d/README.md"));
}

TEST(CorpusInputs, SeekingToAReportedDocumentEndContinuesExactly) {
    TempDirectory directory;
    std::string text, lines;
    for (int d = 0; d < 40; ++d) {
        text += "document " + std::to_string(d) + "\nline two\n\n";
        lines += d % 7 == 3 ? "not json\n" : "{\"text\": \"row " + std::to_string(d) + "\"}\n";
    }
    CorpusOptions options = inputs({directory.write("a.txt.zst", testing::zstd_compressed(text)),
                                    directory.write("b.jsonl", lines), directory.write("c.txt", text)});
    options.doc_separator = kBlankLineSeparator;
    options.skip_bad_lines = true;
    const std::vector<InputFile> files = resolve_inputs(options).files;
    Corpus whole = Corpus::from_files(files, options);
    std::vector<CorpusPosition> ends;
    const std::vector<Document> all = documents_of(whole, &ends);
    ASSERT_EQ(all.size(), 40u + 34u + 40u);
    EXPECT_EQ(ends.back().skipped_lines, 6);
    for (size_t d : {size_t{0}, size_t{17}, size_t{39}, size_t{40}, size_t{55}, size_t{73}, size_t{90}}) {
        SCOPED_TRACE(d);
        Corpus resumed = Corpus::from_files(files, options);
        resumed.seek(ends[d]);
        const std::vector<Document> rest = documents_of(resumed);
        EXPECT_TRUE(
            std::equal(rest.begin(), rest.end(), all.begin() + static_cast<ptrdiff_t>(d) + 1, all.end()));
        EXPECT_EQ(rest.size(), all.size() - d - 1);
        EXPECT_EQ(resumed.skipped_lines(), 6);
    }
}

// The start of a JSON line cut short: the part of the text field it holds, escapes whole.
TEST(CorpusInputs, JsonTextPrefixTakesWhatACutLineHolds) {
    std::string text;
    EXPECT_TRUE(json_text_prefix(R"({"id": 7, "meta": {"a": [1, "}"]}, "text": "caf\u00e9 \"x\" and mor)", "text", text));
    EXPECT_EQ(text, "caf\xc3\xa9 \"x\" and mor");
    EXPECT_TRUE(json_text_prefix(R"({"text": "ab\u00)", "text", text));
    EXPECT_EQ(text, "ab");
    EXPECT_TRUE(json_text_prefix(R"({"text": "ab\ud83d)", "text", text));
    EXPECT_EQ(text, "ab");
    EXPECT_TRUE(json_text_prefix(R"({"text": "whole", "meta": "cut he)", "text", text));
    EXPECT_EQ(text, "whole");
    EXPECT_FALSE(json_text_prefix(R"({"meta": "cut before the te)", "text", text));
    EXPECT_FALSE(json_text_prefix(R"({"text": 12)", "text", text));
    EXPECT_FALSE(json_text_prefix("[1, 2", "text", text));
}

}  // namespace
}  // namespace mixgpt
