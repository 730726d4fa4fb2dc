// The token dataset format (tokenizer/dataset.h, dataset_writer.h,
// document_split.h): what the writer stores, what read_dataset_info accepts
// and how documents are assigned to splits.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/h5.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"
#include "tokenizer/dataset.h"
#include "tokenizer/dataset_writer.h"
#include "tokenizer/document_split.h"

namespace mixgpt {
namespace {

using test::TempDirectory;
using testing::read_offsets;
using testing::read_tokens;

DatasetMetadata metadata_for(int vocab_size) {
    DatasetMetadata metadata;
    metadata.vocab_size = vocab_size;
    metadata.eot_id = 1;
    metadata.unk_id = 0;
    metadata.tokenizer.sha256 = "abc123";
    metadata.command = "mixgpt prepare test";
    return metadata;
}

void expect_error(const std::string& path, const std::string& fragment) {
    try {
        read_dataset_info(path);
        FAIL() << "expected an error reading " << path;
    } catch (const Error& error) {
        const std::string message = error.what();
        EXPECT_EQ(message.rfind(path, 0), 0u) << message;
        EXPECT_NE(message.find(fragment), std::string::npos) << message;
    }
}

TEST(DatasetWriter, StoresDocumentsEndOfTextOffsetsAndCounts) {
    TempDirectory directory;
    const std::string path = directory.file("d.h5");
    // Documents that straddle the HDF5 chunk size, in pieces, into both splits.
    const auto chunk = static_cast<int32_t>(kTokenChunkElements);
    std::vector<std::vector<int32_t>> documents = {{5, 6, 7}, {}, std::vector<int32_t>(chunk + 3, 9), {8}};
    const std::vector<Split> splits = {Split::train, Split::val, Split::train, Split::train};
    const std::vector<int64_t> bytes = {10, 0, 300, 4};
    {
        DatasetWriter writer(path, metadata_for(70000));
        for (size_t d = 0; d < documents.size(); ++d) {
            writer.begin_document(splits[d]);
            const auto& tokens = documents[d];
            const size_t half = tokens.size() / 2;
            writer.append_tokens(tokens.data(), half);
            writer.append_tokens(tokens.data() + half, tokens.size() - half);
            writer.end_document(bytes[d]);
        }
        writer.finish(3, 2);
    }
    const DatasetInfo info = read_dataset_info(path);
    EXPECT_EQ(info.vocab_size, 70000);
    EXPECT_EQ(info.eot_id, 1);
    EXPECT_EQ(info.tokenizer.sha256, "abc123");
    EXPECT_EQ(info.tokenizer_path(), directory.file("tokenizer.model"));
    EXPECT_EQ(info.command, "mixgpt prepare test");
    EXPECT_EQ(info.invalid_utf8_bytes, 3);

    std::vector<int32_t> train_expected, val_expected;
    std::vector<int64_t> train_offsets = {0}, val_offsets = {0};
    int64_t train_bytes = 0;
    for (size_t d = 0; d < documents.size(); ++d) {
        auto& tokens = splits[d] == Split::train ? train_expected : val_expected;
        tokens.insert(tokens.end(), documents[d].begin(), documents[d].end());
        tokens.push_back(1);
        (splits[d] == Split::train ? train_offsets : val_offsets)
            .push_back(static_cast<int64_t>(tokens.size()));
        if (splits[d] == Split::train) train_bytes += bytes[d];
    }
    EXPECT_EQ(read_tokens(path, "train"), train_expected);
    EXPECT_EQ(read_tokens(path, "val"), val_expected);
    EXPECT_EQ(read_offsets(path, "train"), train_offsets);
    EXPECT_EQ(read_offsets(path, "val"), val_offsets);
    EXPECT_EQ(info.train.tokens, static_cast<int64_t>(train_expected.size()));
    EXPECT_EQ(info.train.documents, 3);
    EXPECT_EQ(info.train.bytes, train_bytes);
    EXPECT_EQ(info.val.tokens, 1);
    EXPECT_EQ(info.val.documents, 1);
    EXPECT_EQ(info.val.bytes, 0);

    const h5::File file = h5::File::open_read(path);
    EXPECT_EQ(file.stored_type("/train/tokens"), h5::Type::u32);  // 70000 ids do not fit uint16
    EXPECT_EQ(file.attribute_int("/", "skipped_lines"), 2);
}

TEST(DatasetWriter, UsesUint16WhenTheVocabularyFits) {
    TempDirectory directory;
    const std::string path = directory.file("d.h5");
    {
        DatasetWriter writer(path, metadata_for(65536));
        writer.add_document(Split::train, {65535, 0, 2}, 3);
        writer.finish(0, 0);
    }
    EXPECT_EQ(h5::File::open_read(path).stored_type("/train/tokens"), h5::Type::u16);
    EXPECT_EQ(read_tokens(path, "train"), (std::vector<int32_t>{65535, 0, 2, 1}));
}

TEST(DatasetWriter, RejectsIdsOutsideTheVocabulary) {
    TempDirectory directory;
    DatasetWriter writer(directory.file("d.h5"), metadata_for(100));
    EXPECT_THROW(writer.add_document(Split::train, {5, 100}, 2), Error);
    DatasetWriter negative(directory.file("e.h5"), metadata_for(100));
    EXPECT_THROW(negative.add_document(Split::train, {-1}, 2), Error);
}

std::string write_small_dataset(const TempDirectory& directory) {
    const std::string path = directory.file("small.h5");
    DatasetWriter writer(path, metadata_for(300));
    writer.add_document(Split::train, {3, 4, 5}, 12);
    writer.add_document(Split::val, {6}, 2);
    writer.finish(0, 0);
    return path;
}

TEST(DatasetInfo, RejectsMissingNonHdf5AndTruncatedFiles) {
    TempDirectory directory;
    expect_error(directory.file("missing.h5"), "cannot open");
    expect_error(directory.write("text.h5", "just some text, not HDF5\n"), "not an HDF5 file");
    const std::string complete = testing::read_file(write_small_dataset(directory));
    for (size_t keep : {complete.size() / 2, complete.size() - 100}) {
        const std::string path =
            directory.write("truncated_" + std::to_string(keep) + ".h5", complete.substr(0, keep));
        EXPECT_THROW(read_dataset_info(path), Error) << keep;
        try {
            read_dataset_info(path);
        } catch (const Error& error) {
            EXPECT_EQ(std::string(error.what()).rfind(path, 0), 0u) << error.what();
        }
    }
}

TEST(DatasetInfo, RejectsOtherFormatsVersionsAndInconsistentCounts) {
    TempDirectory directory;
    const std::string other = directory.file("other.h5");
    h5::File::create(other).set_attribute("/", "format", std::string("something-else"));
    expect_error(other, "not a mixgpt token dataset");

    const std::string newer = write_small_dataset(directory);
    h5::File::open_write(newer).set_attribute("/", "format_version", int64_t{99});
    expect_error(newer, "format version 99 is not supported");

    TempDirectory second;
    const std::string miscounted = write_small_dataset(second);
    h5::File::open_write(miscounted).set_attribute("/train", "tokens", int64_t{5});
    expect_error(miscounted, "holds 4 tokens but its attribute says 5");

    TempDirectory third;
    const std::string documents = write_small_dataset(third);
    h5::File::open_write(documents).set_attribute("/val", "documents", int64_t{2});
    expect_error(documents, "expected documents + 1 = 3");
}

TEST(DocumentSplit, IsDeterministicAndDrawsTheRequestedFraction) {
    const int documents = 100000;
    for (double fraction : {0.0, 0.05, 0.5}) {
        int validation = 0;
        for (int d = 0; d < documents; ++d) {
            const Split split = split_of_document(7, d, fraction);
            EXPECT_EQ(split, split_of_document(7, d, fraction));
            validation += split == Split::val ? 1 : 0;
        }
        // Binomial(n, p): the count stays within 5 standard deviations of n p.
        const double mean = documents * fraction,
                     deviation = std::sqrt(documents * fraction * (1 - fraction));
        EXPECT_LE(std::abs(validation - mean), 5 * deviation + 1e-9) << fraction;
    }
    int differences = 0;
    for (int d = 0; d < 1000; ++d)
        differences += split_of_document(1, d, 0.5) != split_of_document(2, d, 0.5) ? 1 : 0;
    EXPECT_GT(differences, 400);  // independent seeds disagree on about half the documents
}

TEST(DocumentSplit, Splitmix64MatchesTheReferenceImplementation) {
    // The first outputs of Vigna's reference splitmix64.c with state 0: its
    // n-th output is splitmix64((n - 1) * 0x9e3779b97f4a7c15).
    const uint64_t golden = 0x9e3779b97f4a7c15ULL;
    EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
    EXPECT_EQ(splitmix64(golden), 0x6e789e6aa1b965f4ULL);
    EXPECT_EQ(splitmix64(2 * golden), 0x06c45d188009454fULL);
}

}  // namespace
}  // namespace mixgpt
