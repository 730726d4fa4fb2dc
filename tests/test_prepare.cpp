// `mixgpt prepare` as a library call (tokenizer/prepare.h, corpus.h): inputs
// of every kind become documents, split deterministically and disjointly,
// with counts that match the data; bad input fails with nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "core/sha256.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"
#include "tokenizer/dataset.h"
#include "tokenizer/document_split.h"
#include "tokenizer/kjv_corpus.h"
#include "tokenizer/prepare.h"

namespace mixgpt {
namespace {

using test::TempDirectory;
using testing::multilingual_documents;
using testing::read_offsets;
using testing::read_tokens;

PrepareOptions options_for(const TempDirectory& directory, std::vector<std::string> inputs) {
    PrepareOptions options;
    options.corpus.inputs = std::move(inputs);
    options.output_directory = directory.file("out");
    options.tokenizer_path = testing::tiny_tokenizer_path();
    options.val_fraction = 0.25;
    options.seed = 3;
    options.threads = 2;
    return options;
}

// The documents of one split, decoded; each must end with the end-of-text token.
std::vector<std::string> split_documents(const std::string& dataset, const std::string& split) {
    const Tokenizer& tokenizer = testing::tiny_tokenizer();
    const std::vector<int32_t> tokens = read_tokens(dataset, split);
    const std::vector<int64_t> offsets = read_offsets(dataset, split);
    std::vector<std::string> documents;
    for (size_t d = 0; d + 1 < offsets.size(); ++d) {
        const auto begin = static_cast<size_t>(offsets[d]), end = static_cast<size_t>(offsets[d + 1]);
        EXPECT_LT(begin, end);
        EXPECT_EQ(tokens[end - 1], tokenizer.eot_id());
        documents.push_back(tokenizer.decode(tokens.data() + begin, end - 1 - begin));
    }
    EXPECT_EQ(offsets.back(), static_cast<int64_t>(tokens.size()));
    return documents;
}

std::vector<std::string> sorted(std::vector<std::string> values) {
    std::sort(values.begin(), values.end());
    return values;
}

std::vector<std::string> all_documents(const std::string& dataset) {
    std::vector<std::string> documents = split_documents(dataset, "train");
    for (std::string& document : split_documents(dataset, "val")) documents.push_back(std::move(document));
    return sorted(documents);
}

int64_t total_bytes(const std::vector<std::string>& documents) {
    int64_t bytes = 0;
    for (const std::string& document : documents) bytes += static_cast<int64_t>(document.size());
    return bytes;
}

TEST(Prepare, FilesBecomeDocumentsInDisjointDeterministicSplits) {
    TempDirectory directory;
    const std::vector<std::string> documents = multilingual_documents(40, 11);
    const std::vector<std::string> distinct = sorted(documents);
    ASSERT_EQ(std::adjacent_find(distinct.begin(), distinct.end()), distinct.end());
    std::vector<std::string> train_expected, val_expected;
    for (size_t d = 0; d < documents.size(); ++d) {
        directory.write(format("corpus/doc_%03zu.txt", d), documents[d]);
        (split_of_document(3, static_cast<int64_t>(d), 0.25) == Split::val ? val_expected : train_expected)
            .push_back(documents[d]);
    }
    const PrepareOptions options = options_for(directory, {directory.file("corpus")});
    const PrepareResult result = run_prepare(options);

    const std::vector<std::string> train = split_documents(result.dataset_path, "train");
    const std::vector<std::string> val = split_documents(result.dataset_path, "val");
    EXPECT_EQ(train, train_expected);  // corpus order, documents numbered over sorted files
    EXPECT_EQ(val, val_expected);
    const DatasetInfo info = read_dataset_info(result.dataset_path);
    EXPECT_EQ(info.train.tokens, static_cast<int64_t>(read_tokens(result.dataset_path, "train").size()));
    EXPECT_EQ(info.val.tokens, static_cast<int64_t>(read_tokens(result.dataset_path, "val").size()));
    EXPECT_EQ(info.train.documents, static_cast<int64_t>(train_expected.size()));
    EXPECT_EQ(info.val.documents, static_cast<int64_t>(val_expected.size()));
    EXPECT_EQ(info.train.bytes, total_bytes(train_expected));
    EXPECT_EQ(info.val.bytes, total_bytes(val_expected));
    EXPECT_EQ(info.tokenizer.sha256, testing::tiny_tokenizer().sha256());
    EXPECT_EQ(sha256_file_hex(result.tokenizer_path), testing::tiny_tokenizer().sha256());  // copied beside
    EXPECT_EQ(info.tokenizer_path(), result.tokenizer_path);

    PrepareOptions again = options;
    again.output_directory = directory.file("again");
    const PrepareResult repeated = run_prepare(again);
    EXPECT_EQ(read_tokens(repeated.dataset_path, "train"), read_tokens(result.dataset_path, "train"));
    EXPECT_EQ(read_offsets(repeated.dataset_path, "val"), read_offsets(result.dataset_path, "val"));

    PrepareOptions one_thread = options;
    one_thread.output_directory = directory.file("one_thread");
    one_thread.threads = 1;
    EXPECT_EQ(read_tokens(run_prepare(one_thread).dataset_path, "train"),
              read_tokens(result.dataset_path, "train"));

    PrepareOptions reseeded = options;
    reseeded.output_directory = directory.file("reseeded");
    reseeded.seed = 4;
    const PrepareResult other = run_prepare(reseeded);
    EXPECT_NE(split_documents(other.dataset_path, "val"), val);
    EXPECT_EQ(all_documents(other.dataset_path), sorted(documents));
}

TEST(Prepare, TrainsTheSameTokenizerTwice) {
    TempDirectory directory;
    const std::vector<std::string> documents = multilingual_documents(40, 12);
    for (size_t d = 0; d < documents.size(); ++d) directory.write(format("c/%zu.txt", d), documents[d]);
    PrepareOptions options = options_for(directory, {directory.file("c")});
    options.tokenizer_path.clear();
    options.tokenizer.vocab_size = 500;
    const PrepareResult first = run_prepare(options);
    options.output_directory = directory.file("second");
    const PrepareResult second = run_prepare(options);
    EXPECT_EQ(sha256_file_hex(first.tokenizer_path), sha256_file_hex(second.tokenizer_path));
    EXPECT_EQ(read_tokens(first.dataset_path, "train"), read_tokens(second.dataset_path, "train"));
    const Tokenizer tokenizer = Tokenizer::load(first.tokenizer_path);
    EXPECT_EQ(tokenizer.vocab_size(), 500);
    EXPECT_EQ(read_dataset_info(first.dataset_path).tokenizer.sha256, tokenizer.sha256());
}

TEST(Prepare, ReadsSeparatorsParagraphsJsonlGzipDirectoriesAndGlobs) {
    TempDirectory directory;
    directory.write("sep.txt", "first doc\nline two\n<DOC>\nsecond doc\n<DOC>\n<DOC>\r\nthird doc");
    PrepareOptions options = options_for(directory, {directory.file("sep.txt")});
    options.corpus.doc_separator = "<DOC>";
    options.val_fraction = 0;
    EXPECT_EQ(all_documents(run_prepare(options).dataset_path),
              sorted({"first doc\nline two\n", "second doc\n", "third doc"}));

    directory.write("para/a.txt", "para one\nstill one\n\n  \t\npara two\n\n\n");
    testing::write_gzip(directory.file("para/b.txt.gz"), "para three\n");
    directory.write("para/.hidden.txt", "never read\n");
    options.corpus = {};
    options.corpus.inputs = {directory.file("para")};
    options.corpus.doc_separator = kBlankLineSeparator;
    options.output_directory = directory.file("out_para");
    EXPECT_EQ(all_documents(run_prepare(options).dataset_path),
              sorted({"para one\nstill one\n", "para two\n", "para three\n"}));

    directory.write("j/1.jsonl",
                    "{\"body\": \"json one\\nwith \\u00e9\", \"id\": 1}\n\n{\"body\": \"json two\"}\n");
    testing::write_gzip(directory.file("j/2.jsonl.gz"), "{\"body\": \"json three\"}");
    directory.write("j/3.txt", "a plain text file next to them\n");
    options.corpus = {};
    options.corpus.inputs = {directory.file("j/*.jsonl*"), directory.file("j/3.*")};
    options.corpus.jsonl_key = "body";
    options.output_directory = directory.file("out_jsonl");
    EXPECT_EQ(
        all_documents(run_prepare(options).dataset_path),
        sorted({"json one\nwith \xC3\xA9", "json two", "json three", "a plain text file next to them\n"}));
}

TEST(Prepare, StreamsLongDocumentsInSegmentsWithoutChangingTokens) {
    TempDirectory directory;
    std::string lines, spaces, unbroken;
    for (int i = 0; lines.size() < 2 * TextSegment::kSegmentBytes + 12345; ++i)
        lines += "line " + std::to_string(i) + " of the  long document\n";
    for (int i = 0; spaces.size() < TextSegment::kSegmentBytes + 777; ++i)
        spaces += "word" + std::to_string(i % 97) + " ";
    while (unbroken.size() < TextSegment::kSegmentBytes + 5) unbroken += "長文字";
    directory.write("long/1.txt", lines);
    directory.write("long/2.txt", spaces);
    directory.write("long/3.txt", unbroken);
    PrepareOptions options = options_for(directory, {directory.file("long")});
    options.val_fraction = 0;
    const PrepareResult result = run_prepare(options);
    const std::vector<std::string> documents = split_documents(result.dataset_path, "train");
    ASSERT_EQ(documents.size(), 3u);
    EXPECT_TRUE(documents[0] == lines);
    EXPECT_TRUE(documents[1] == spaces);
    EXPECT_TRUE(documents[2] == unbroken);
    // Cuts at newlines and before spaces leave the tokens as if encoded whole.
    const Tokenizer& tokenizer = testing::tiny_tokenizer();
    const std::vector<int32_t> tokens = read_tokens(result.dataset_path, "train");
    const std::vector<int64_t> offsets = read_offsets(result.dataset_path, "train");
    for (int d : {0, 1}) {
        std::vector<int32_t> expected = tokenizer.encode(documents[static_cast<size_t>(d)]);
        expected.push_back(tokenizer.eot_id());
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(),
                               tokens.begin() + offsets[static_cast<size_t>(d)],
                               tokens.begin() + offsets[static_cast<size_t>(d) + 1]))
            << "document " << d;
    }
}

TEST(Prepare, CountsAndKeepsInvalidUtf8) {
    TempDirectory directory;
    const std::string text = "valid text \xFF then \xC3 and \xE2\x82 end\n";  // 1 + 1 + 2 invalid bytes
    directory.write("bad_utf8.txt", text);
    PrepareOptions options = options_for(directory, {directory.file("bad_utf8.txt")});
    options.val_fraction = 0;
    const PrepareResult result = run_prepare(options);
    EXPECT_EQ(result.invalid_utf8_bytes, 4);
    EXPECT_EQ(read_dataset_info(result.dataset_path).invalid_utf8_bytes, 4);
    EXPECT_EQ(split_documents(result.dataset_path, "train"), std::vector<std::string>{text});
}

TEST(Prepare, SkipsAndCountsBadJsonlLinesWhenAsked) {
    TempDirectory directory;
    directory.write(
        "mixed.jsonl",
        "{\"text\": \"good one\"}\n{not json\n{\"other\": 1}\n[1, 2]\n{\"text\": \"good two\"}\n");
    PrepareOptions options = options_for(directory, {directory.file("mixed.jsonl")});
    options.corpus.skip_bad_lines = true;
    options.val_fraction = 0;
    const PrepareResult result = run_prepare(options);
    EXPECT_EQ(result.skipped_lines, 3);
    EXPECT_EQ(all_documents(result.dataset_path), sorted({"good one", "good two"}));
}

// Runs prepare expecting an Error whose message holds every fragment, and
// checks that nothing was left behind: not even the output directory it made.
void expect_failure(const PrepareOptions& options, const std::vector<std::string>& fragments) {
    try {
        run_prepare(options);
        ADD_FAILURE() << "expected an error";
    } catch (const Error& error) {
        const std::string message = error.what();
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        for (const std::string& fragment : fragments)
            EXPECT_NE(message.find(fragment), std::string::npos)
                << "'" << fragment << "' not in: " << message;
    }
    EXPECT_FALSE(std::filesystem::exists(options.output_directory)) << options.output_directory;
}

TEST(PrepareErrors, BadInputsFailWithTheirReasonAndWriteNothing) {
    TempDirectory directory;
    const std::string missing = directory.file("missing.txt");
    expect_failure(options_for(directory, {missing}), {missing, "no such file"});
    expect_failure(options_for(directory, {directory.file("*.nothing")}), {"no file matches"});
    directory.write("empty_dir/.hidden", "x");
    expect_failure(options_for(directory, {directory.file("empty_dir")}), {"holds no text-like files"});

    const std::string empty = directory.write("empty.txt", "");
    expect_failure(options_for(directory, {empty}), {"empty corpus", empty});
    PrepareOptions training = options_for(directory, {empty});
    training.tokenizer_path.clear();
    expect_failure(training, {"empty corpus", empty});

    const std::string not_json = directory.write("bad.jsonl", "{\"text\": \"fine\"}\n{\"text\": oops}\n");
    expect_failure(options_for(directory, {not_json}), {not_json + ":2: not valid JSON"});
    const std::string no_key = directory.write("nokey.jsonl", "{\"text\": \"fine\"}\n\n{\"body\": \"x\"}\n");
    expect_failure(options_for(directory, {no_key}), {no_key + ":3: no string field 'text'"});

    const std::string corpus = multilingual_documents(1, 15)[0];
    const std::string truncated = directory.file("truncated.txt.gz");
    testing::write_gzip(truncated, corpus + corpus + corpus);
    std::filesystem::resize_file(truncated, std::filesystem::file_size(truncated) - 10);
    expect_failure(options_for(directory, {truncated}), {truncated + ": truncated gzip data"});

    const std::string one = directory.write("one.txt", "a single document\n");
    expect_failure(options_for(directory, {one}), {"validation split would be empty"});

    PrepareOptions missing_tokenizer = options_for(directory, {one});
    missing_tokenizer.tokenizer_path = directory.file("none.model");
    expect_failure(missing_tokenizer, {directory.file("none.model"), "cannot open"});
}

TEST(PrepareErrors, VocabularySizesThatDoNotFitTheCorpus) {
    TempDirectory directory;
    const std::vector<std::string> documents = multilingual_documents(10, 13);
    for (size_t d = 0; d < documents.size(); ++d) directory.write(format("c/%zu.txt", d), documents[d]);
    PrepareOptions options = options_for(directory, {directory.file("c")});
    options.tokenizer_path.clear();
    options.tokenizer.vocab_size = 200;
    expect_failure(options, {"vocabulary size 200 is too small"});
    options.tokenizer.vocab_size = 50000;
    expect_failure(options, {"vocabulary size 50000 is too large"});
}

TEST(PrepareErrors, ExistingOutputsNeedForce) {
    TempDirectory directory;
    const std::vector<std::string> documents = multilingual_documents(8, 14);
    for (size_t d = 0; d < documents.size(); ++d) directory.write(format("c/%zu.txt", d), documents[d]);
    PrepareOptions options = options_for(directory, {directory.file("c")});
    options.val_fraction = 0.5;
    const PrepareResult result = run_prepare(options);
    const std::string index = result.dataset_path + "/index.json";
    const std::string before = testing::read_file(index);
    options.seed = 5;
    try {
        run_prepare(options);
        ADD_FAILURE() << "expected an error";
    } catch (const Error& error) {
        EXPECT_NE(std::string(error.what())
                      .find(result.dataset_path + ": already exists and holds a dataset (--force"),
                  std::string::npos)
            << error.what();
    }
    EXPECT_EQ(testing::read_file(index), before);
    options.force = true;
    run_prepare(options);
    EXPECT_NE(testing::read_file(index), before);
    const std::vector<std::string> outputs = sorted({"index.json", "shard-000000.h5", "tokenizer.model"});
    std::vector<std::string> present;
    for (const auto& entry : std::filesystem::directory_iterator(options.output_directory))
        present.push_back(entry.path().filename().string());
    EXPECT_EQ(sorted(present), outputs);  // no temporary file left behind
}

TEST(CorpusSample, TakesEachInputsShareFromRegionsSpreadOverIt) {
    TempDirectory directory;
    std::string large, small;
    for (int i = 0; large.size() < 400'000; ++i) large += format("large line %06d\n", i);
    for (int i = 0; small.size() < 200'000; ++i) small += format("small line %06d\n", i);
    CorpusOptions options;
    options.inputs = {directory.write("large.txt", large), directory.file("small.txt.gz")};
    testing::write_gzip(options.inputs[1], small);
    const std::vector<InputFile> files = resolve_inputs(options).files;
    const size_t budget = 150'000;
    const TrainingSample sample = Corpus::from_files(files, options).sample(budget);

    size_t large_bytes = 0, small_bytes = 0;
    int last_large = -1, last_small = -1;
    for (const std::string& sentence : sample.sentences()) {
        const bool is_large = sentence.rfind("large line ", 0) == 0;
        ASSERT_TRUE(is_large || sentence.rfind("small line ", 0) == 0) << sentence;  // whole lines only
        const int number = std::stoi(sentence.substr(11));
        (is_large ? large_bytes : small_bytes) += sentence.size();
        (is_large ? last_large : last_small) = std::max(is_large ? last_large : last_small, number);
    }
    // Shares follow the sizes on disk; each region stops after the line that
    // fills it (lines are 17 bytes without their newline).
    const uint64_t total = files[0].bytes + files[1].bytes;
    const double large_share = static_cast<double>(budget) * files[0].bytes / total;
    const double small_share = static_cast<double>(budget) * files[1].bytes / total;
    EXPECT_NEAR(static_cast<double>(large_bytes), large_share, 17 * 2);
    EXPECT_NEAR(static_cast<double>(small_bytes), small_share, 17);
    // The plain file is read in regions spread over it, beyond the prefix its
    // share would cover; the compressed one, which cannot seek, from its start.
    EXPECT_GT(last_large, 1.5 * static_cast<double>(large_bytes) / 17);
    EXPECT_EQ(last_small + 1, static_cast<int>((small_bytes + 16) / 17));
}

TEST(KjvCorpus, SplitsTheBibleProgramsOutputIntoChapters) {
    const std::string output =
        "\nGenesis 1\n\n  1 In the beginning.\n  2 And the earth.\n\n1 John 2\n\n  1 My little children.\n";
    EXPECT_EQ(split_kjv_chapters(output),
              (std::vector<std::string>{"Genesis 1\n1 In the beginning.\n2 And the earth.\n",
                                        "1 John 2\n1 My little children.\n"}));
    EXPECT_THROW(split_kjv_chapters("  1 a verse before any heading\n"), Error);
}

TEST(Prepare, KingJamesBibleRoundTripsChapterByChapter) {
    std::vector<std::string> chapters;
    try {
        chapters = kjv_chapters();
    } catch (const Error& error) {
        GTEST_SKIP() << error.what();
    }
    TempDirectory directory;
    PrepareOptions options;
    options.builtin_corpus = "kjv";
    options.output_directory = directory.file("kjv");
    options.tokenizer.vocab_size = 2048;
    options.tokenizer_sample_bytes = 1'000'000;
    const PrepareResult result = run_prepare(options);
    const Tokenizer tokenizer = Tokenizer::load(result.tokenizer_path);
    std::vector<std::string> decoded[2];
    for (int split = 0; split < 2; ++split) {
        const std::string name = split == 0 ? "train" : "val";
        const std::vector<int32_t> tokens = read_tokens(result.dataset_path, name);
        const std::vector<int64_t> offsets = read_offsets(result.dataset_path, name);
        for (size_t d = 0; d + 1 < offsets.size(); ++d)
            decoded[split].push_back(
                tokenizer.decode(tokens.data() + offsets[d], offsets[d + 1] - 1 - offsets[d]));
    }
    ASSERT_EQ(decoded[0].size() + decoded[1].size(), chapters.size());
    size_t next[2] = {0, 0};
    for (size_t c = 0; c < chapters.size(); ++c) {
        const int split =
            split_of_document(options.seed, static_cast<int64_t>(c), options.val_fraction) == Split::val;
        ASSERT_TRUE(decoded[split][next[split]++] == chapters[c]) << "chapter " << c;
    }
    EXPECT_EQ(result.train.documents + result.val.documents, 1189);
}

}  // namespace
}  // namespace mixgpt
