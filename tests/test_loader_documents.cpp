// Document-aligned training windows (LoaderOptions::align_documents, train's --align-documents;
// tokenizer/split_windows.h) on a dataset whose token at position p is p (its end-of-text tokens
// aside), so each row shows where its window starts. The expected starts are worked out by hand
// from the documents' lengths below.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "core/error.h"
#include "tests/test_support.h"
#include "tokenizer/dataset_writer.h"
#include "tokenizer/loader.h"

namespace mixgpt {
namespace {

using test::TempDirectory;

constexpr int kVocab = 1 << 20;
constexpr int32_t kEot = kVocab - 1;
constexpr int kT = 8;
// Documents of 4, 21, 6, 2, 1 (empty: its end-of-text token alone), 9, 10 and 13 tokens, their
// end-of-text token included: offsets 0, 4, 25, 31, 33, 34, 43, 53, 66. Windows of T = 8 start at
// each document's first token, and 8 apart within one longer than 8, never at an end-of-text token
// and while T + 1 tokens remain: 0 | 4 12 20 | 25 | 31 | - | 34 (42 is its end) | 43 51 | 53
// (61 + 9 > 66).
const std::vector<int64_t> kDocumentLengths = {4, 21, 6, 2, 1, 9, 10, 13};
const std::vector<int32_t> kAlignedStarts = {0, 4, 12, 20, 25, 31, 34, 43, 51, 53};

// A dataset of the documents above in both splits, token p being p unless it ends a document.
std::string write_documents(const TempDirectory& directory, const std::string& name) {
    const std::string path = directory.file(name);
    DatasetMetadata metadata;
    metadata.vocab_size = kVocab;
    metadata.eot_id = kEot;
    metadata.tokenizer.sha256 = "counting";
    metadata.command = "write_documents";
    DatasetWriter writer(path, metadata);
    for (Split split : {Split::train, Split::val}) {
        int32_t position = 0;
        for (int64_t length : kDocumentLengths) {
            std::vector<int32_t> tokens(static_cast<size_t>(length - 1));
            std::iota(tokens.begin(), tokens.end(), position);
            writer.add_document(split, tokens, length);
            position += static_cast<int32_t>(length);
        }
    }
    writer.finish(0, 0);
    return path;
}

LoaderOptions aligned_options(const std::string& path, int batch_size) {
    LoaderOptions options;
    options.dataset_path = path;
    options.batch_size = batch_size;
    options.seq_len = kT;
    options.seed = 5;
    options.align_documents = true;
    return options;
}

// The first token of each row of the next `batches` batches, after checking that every row is the
// T + 1 consecutive positions from there (end-of-text tokens where documents end).
std::vector<int32_t> next_starts(DataLoader& loader, int batch_size, int batches) {
    std::vector<int32_t> starts;
    Batch batch;
    for (int b = 0; b < batches; ++b) {
        EXPECT_TRUE(loader.next(batch));
        for (int row = 0; row < batch_size; ++row) {
            const int32_t* tokens = batch.tokens + static_cast<size_t>(row) * (kT + 1);
            int first = 0;  // the row's first tokens may end documents
            while (tokens[first] == kEot) ++first;
            for (int t = 0; t <= kT; ++t) {
                if (tokens[t] != kEot) {
                    EXPECT_EQ(tokens[t] - t, tokens[first] - first) << "row " << row;
                }
            }
            starts.push_back(tokens[0]);
        }
    }
    return starts;
}

TEST(LoaderDocuments, AnEpochVisitsEveryDocumentAlignedWindowOnce) {
    TempDirectory directory;
    const std::string path = write_documents(directory, "documents.h5");
    DataLoader loader(aligned_options(path, 1));
    EXPECT_EQ(loader.windows_per_epoch(), static_cast<int64_t>(kAlignedStarts.size()));
    for (int epoch = 0; epoch < 2; ++epoch) {
        std::vector<int32_t> starts = next_starts(loader, 1, static_cast<int>(kAlignedStarts.size()));
        std::sort(starts.begin(), starts.end());
        EXPECT_EQ(starts, kAlignedStarts) << "epoch " << epoch;
    }
    LoaderOptions unaligned = aligned_options(path, 1);
    unaligned.align_documents = false;
    EXPECT_EQ(DataLoader(unaligned).windows_per_epoch(), 8);  // (66 - 1) / 8
}

TEST(LoaderDocuments, ResumingGivesWhatAnUninterruptedRunGivesAndOtherAlignmentIsRefused) {
    TempDirectory directory;
    const std::string path = write_documents(directory, "documents.h5");
    const LoaderOptions options = aligned_options(path, 2);  // 5 batches per epoch
    for (int stop : {0, 3, 5, 7}) {
        DataLoader first(options);
        next_starts(first, 2, stop);
        DataLoader resumed(options), reference(options);
        resumed.restore(first.state());
        next_starts(reference, 2, stop);
        EXPECT_EQ(next_starts(resumed, 2, 6), next_starts(reference, 2, 6)) << "stop " << stop;
    }
    LoaderOptions unaligned = options;
    unaligned.align_documents = false;
    DataLoader other(unaligned);
    const std::string message = test::error_of([&] { other.restore(DataLoader(options).state()); });
    EXPECT_NE(message.find("document alignment"), std::string::npos) << message;
}

// Evaluation reads the split as always; a mixture aligns each of its sources.
TEST(LoaderDocuments, EvalIgnoresAlignmentAndMixturesAlignEverySource) {
    TempDirectory directory;
    const std::string first = write_documents(directory, "first.h5"), second = write_documents(directory, "second.h5");
    LoaderOptions eval = aligned_options(first, 1);
    eval.mode = LoaderMode::eval;
    eval.split = "val";
    DataLoader evaluation(eval);
    EXPECT_EQ(evaluation.windows_per_epoch(), 8);
    // Every 8 tokens from 0; positions 24 and 32 end documents.
    EXPECT_EQ(next_starts(evaluation, 1, 8), (std::vector<int32_t>{0, 8, 16, kEot, kEot, 40, 48, 56}));

    LoaderOptions mixture = aligned_options("", 1);
    mixture.mixture = {{first, 1.0}, {second, 1.0}};
    DataLoader mixed(mixture);
    std::set<int32_t> starts;
    for (int32_t start : next_starts(mixed, 1, 40)) starts.insert(start);
    EXPECT_EQ(std::vector<int32_t>(starts.begin(), starts.end()), kAlignedStarts);
}

}  // namespace
}  // namespace mixgpt
