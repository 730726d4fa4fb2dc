// Dataset folders (tokenizer/dataset_index.h, shard_writer.h, split_windows.h, prepare.h,
// mixture_order.h): shards close at document ends and hold both splits, windows never span two
// shards and an epoch covers each once, --append and an interrupted prepare resumed give what
// one uninterrupted run gives, and mixtures draw rows in proportion, resumably.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "core/sha256.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"
#include "tests/test_train_support.h"
#include "tests/train_equivalence.h"
#include "tokenizer/dataset_index.h"
#include "tokenizer/document_split.h"
#include "tokenizer/loader.h"
#include "tokenizer/prepare.h"
#include "train/loader_rebatch.h"
#include "train/train_options.h"

namespace mixgpt {
namespace {

using test::TempDirectory;
namespace fs = std::filesystem;

PrepareOptions prepare_options(const std::vector<std::string>& inputs, const std::string& output) {
    PrepareOptions options;
    options.corpus.inputs = inputs;
    options.output_directory = output;
    options.tokenizer_path = testing::tiny_tokenizer_path();
    options.val_fraction = 0.2;
    options.seed = 5;
    options.threads = 2;
    options.shard_tokens = 3000;
    return options;
}

// A corpus folder of `count` generated documents.
std::string write_corpus(const TempDirectory& directory, const std::string& name, int count, uint32_t seed) {
    const std::vector<std::string> documents = testing::multilingual_documents(count, seed);
    for (size_t d = 0; d < documents.size(); ++d)
        directory.write(format("%s/%03zu.txt", name.c_str(), d), documents[d]);
    return directory.file(name);
}

// Every file of a dataset folder but the index, with its SHA-256.
std::map<std::string, std::string> shard_hashes(const std::string& folder) {
    std::map<std::string, std::string> hashes;
    for (const auto& entry : fs::directory_iterator(folder)) {
        if (entry.path().extension() == ".h5")
            hashes[entry.path().filename().string()] = sha256_file_hex(entry.path());
    }
    return hashes;
}

std::vector<std::string> file_names(const std::string& folder) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

TEST(DatasetShards, ShardsCloseAtDocumentEndsAndEachHoldsBothSplits) {
    TempDirectory directory;
    const std::string corpus = write_corpus(directory, "c", 120, 21);
    const PrepareResult result = run_prepare(prepare_options({corpus}, directory.file("sharded")));
    PrepareOptions whole = prepare_options({corpus}, directory.file("whole"));
    whole.shard_tokens = int64_t{1} << 40;
    run_prepare(whole);
    const DatasetIndex index = read_index(result.dataset_path + "/index.json");
    ASSERT_GE(index.shards.size(), 4u);
    EXPECT_EQ(read_index(directory.file("whole/index.json")).shards.size(), 1u);
    const std::vector<int64_t> offsets_train = testing::read_offsets(result.dataset_path, "train");
    int64_t document = 0;
    for (size_t s = 0; s < index.shards.size(); ++s) {
        const ShardRecord& shard = index.shards[s];
        SCOPED_TRACE(shard.file);
        EXPECT_EQ(shard.first_document, document);
        document += shard.documents();
        const int64_t tokens = shard.train.tokens + shard.val.tokens;
        if (s + 1 < index.shards.size()) {
            EXPECT_GE(tokens, 3000);
        }
        EXPECT_GT(shard.val.documents, 0);  // stratified split: every 2/f documents hold a validation one
        EXPECT_EQ(shard.sha256, sha256_file_hex(result.dataset_path + "/" + shard.file));
        EXPECT_EQ(shard.bytes, fs::file_size(result.dataset_path + "/" + shard.file));
    }
    EXPECT_EQ(document, 120);
    // The same documents, tokens and splits as one shard holding everything.
    for (const char* split : {"train", "val"}) {
        EXPECT_EQ(testing::read_tokens(result.dataset_path, split),
                  testing::read_tokens(directory.file("whole"), split));
        EXPECT_EQ(testing::read_offsets(result.dataset_path, split),
                  testing::read_offsets(directory.file("whole"), split));
    }
    EXPECT_EQ(file_names(result.dataset_path).back(), "tokenizer.model");
    EXPECT_EQ(result.shards, static_cast<int64_t>(index.shards.size()));
}

TEST(DatasetShards, WindowsStayInsideShardsAndAnEpochCoversEachOnce) {
    TempDirectory directory;
    constexpr int kStep = 100000, kVocab = 1 << 20, T = 8;
    testing::write_counting_folder(directory.file("d"), {100, 5, 57, 230}, kVocab, kStep);
    LoaderOptions options;
    options.dataset_path = directory.file("d");
    options.batch_size = 1;
    options.seq_len = T;
    options.seed = 3;
    DataLoader loader(options);
    const int64_t windows = 99 / T + 0 + 56 / T + 229 / T;  // a 5-token shard has none
    ASSERT_EQ(loader.windows_per_epoch(), windows);
    std::map<int64_t, int> visits;  // first token of a window -> times seen
    Batch batch;
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
        std::set<int64_t> seen;
        for (int64_t i = 0; i < windows; ++i) {
            ASSERT_TRUE(loader.next(batch));
            EXPECT_EQ(batch.epoch, epoch);
            const int32_t first = batch.tokens[0];
            const int32_t shard_start = first / kStep * kStep;
            EXPECT_EQ((first - shard_start) % T, 0);
            for (int t = 1; t <= T; ++t)  // consecutive within one shard (or its end-of-text token)
                EXPECT_TRUE(batch.tokens[t] == first + t || batch.tokens[t] == kVocab - 1)
                    << first << " " << t;
            seen.insert(first);
            ++visits[first];
        }
        EXPECT_EQ(static_cast<int64_t>(seen.size()), windows);  // each window once per epoch
    }
    for (const auto& [first, count] : visits) EXPECT_EQ(count, 3) << first;
}

TEST(DatasetShards, AppendGivesTheDocumentsOfOneRunOverBothCorpora) {
    TempDirectory directory;
    const std::string first = write_corpus(directory, "first", 50, 31);
    const std::string second = write_corpus(directory, "second", 40, 32);
    const std::string dataset = directory.file("grown");
    run_prepare(prepare_options({first}, dataset));
    const std::map<std::string, std::string> before = shard_hashes(dataset);
    PrepareOptions append = prepare_options({second}, dataset);
    append.append = true;
    append.tokenizer_path.clear();  // the dataset's own
    append.seed = 99;               // ignored: the dataset's seed and fraction continue
    const PrepareResult grown = run_prepare(append);
    const std::map<std::string, std::string> after = shard_hashes(dataset);
    for (const auto& [name, hash] : before) EXPECT_EQ(after.at(name), hash) << name;  // untouched
    EXPECT_GT(after.size(), before.size());
    EXPECT_EQ(grown.train.documents + grown.val.documents, 90);
    EXPECT_EQ(read_index(dataset + "/index.json").commands.size(), 2u);

    PrepareOptions once = prepare_options({first, second}, directory.file("once"));
    run_prepare(once);
    for (const char* split : {"train", "val"})
        EXPECT_EQ(testing::read_tokens(dataset, split), testing::read_tokens(directory.file("once"), split))
            << split;

    // A single-file dataset (format version 1) grows into a folder whose first shard is that file.
    TempDirectory old;
    const std::string single = old.file("legacy");
    fs::create_directories(single);
    testing::write_counting_dataset(single + "/dataset.h5", 300, testing::tiny_tokenizer().vocab_size(),
                                    testing::tiny_tokenizer().sha256());
    fs::copy_file(testing::tiny_tokenizer_path(), single + "/tokenizer.model");
    PrepareOptions onto_single = prepare_options({second}, single);
    onto_single.append = true;
    const PrepareResult from_single = run_prepare(onto_single);
    const DatasetIndex index = read_index(single + "/index.json");
    EXPECT_EQ(index.shards.front().file, "dataset.h5");
    EXPECT_EQ(index.shards.front().documents(), 2);
    EXPECT_EQ(from_single.train.documents + from_single.val.documents, 42);
}

TEST(DatasetShards, AnInterruptedPrepareResumesToTheSameBytes) {
    TempDirectory directory;
    const std::string corpus = write_corpus(directory, "c", 150, 41);
    const PrepareResult whole = run_prepare(prepare_options({corpus}, directory.file("whole")));
    ASSERT_GE(whole.shards, 4);

    PrepareOptions options = prepare_options({corpus}, directory.file("stopped"));
    // As SIGTERM would, once two shards are complete.
    options.stop_requested = [&options] { return fs::exists(options.output_directory + "/shard-000001.h5"); };
    const std::string message = test::error_of([&] { run_prepare(options); });
    EXPECT_NE(message.find("stopped by a signal; 2 complete shards are kept"), std::string::npos) << message;
    EXPECT_NE(message.find("--resume"), std::string::npos) << message;
    for (const std::string& name : file_names(options.output_directory))
        EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;  // no temporary left
    EXPECT_TRUE(fs::exists(options.output_directory + "/progress.json"));
    EXPECT_FALSE(fs::exists(options.output_directory + "/index.json"));
    EXPECT_FALSE(fs::exists(options.output_directory + "/shard-000002.h5"));

    // Stopped before its first shard, a run removes what it wrote.
    PrepareOptions early = prepare_options({corpus}, directory.file("early"));
    early.stop_requested = [] { return true; };
    EXPECT_NE(test::error_of([&] { run_prepare(early); }).find("stopped by a signal"), std::string::npos);
    EXPECT_FALSE(fs::exists(early.output_directory));
    options.stop_requested = nullptr;
    options.resume = true;
    const PrepareResult resumed = run_prepare(options);
    EXPECT_EQ(shard_hashes(options.output_directory), shard_hashes(whole.dataset_path));
    EXPECT_EQ(resumed.train.tokens, whole.train.tokens);
    EXPECT_FALSE(fs::exists(options.output_directory + "/progress.json"));
    // Resuming a complete dataset does nothing.
    EXPECT_EQ(run_prepare(options).shards_written, 0);
}

TEST(DatasetShards, AnUnfinishedPrepareIsNotADatasetAndNeedsResumeOrForce) {
    TempDirectory directory;
    const std::string corpus = write_corpus(directory, "c", 60, 42);
    PrepareOptions options = prepare_options({corpus}, directory.file("d"));
    options.stop_requested = [&options] { return fs::exists(options.output_directory + "/shard-000000.h5"); };
    test::error_of([&] { run_prepare(options); });
    ASSERT_TRUE(fs::exists(options.output_directory + "/progress.json"));
    EXPECT_NE(
        test::error_of([&] { read_dataset_info(options.output_directory); }).find("prepare has not finished"),
        std::string::npos);
    options.stop_requested = nullptr;
    EXPECT_NE(
        test::error_of([&] { run_prepare(options); }).find("--resume continues it, --force starts over"),
        std::string::npos);
    options.val_fraction = 0.3;
    options.resume = true;
    EXPECT_NE(test::error_of([&] { run_prepare(options); }).find("val_fraction"), std::string::npos);
}

LoaderOptions mixture_options(const std::string& a, const std::string& b, int rank, int ranks) {
    LoaderOptions options;
    options.mixture = {{a, 0.7}, {b, 0.3}};
    options.batch_size = 4;
    options.seq_len = 8;
    options.seed = 11;
    options.rank = rank;
    options.world_size = ranks;
    return options;
}

// The first token of each row of the next `count` batches.
std::vector<int32_t> next_rows(DataLoader& loader, int64_t count, const LoaderOptions& options) {
    std::vector<int32_t> rows;
    Batch batch;
    for (int64_t i = 0; i < count; ++i) {
        EXPECT_TRUE(loader.next(batch));
        for (int row = 0; row < options.batch_size; ++row)
            rows.push_back(batch.tokens[row * (options.seq_len + 1)]);
    }
    return rows;
}

TEST(DatasetMixture, RowsComeInProportionDeterministicallyAndResumeExactly) {
    TempDirectory directory;
    constexpr int kVocab = 1 << 20, kStep = 200000;
    testing::write_counting_folder(directory.file("a"), {800, 500}, kVocab, kStep);        // tokens < 400000
    testing::write_counting_folder(directory.file("b"), {300}, kVocab, kStep, 3 * kStep);  // tokens >= 600000
    const LoaderOptions options = mixture_options(directory.file("a"), directory.file("b"), 0, 1);
    DataLoader loader(options);
    const std::vector<int32_t> rows = next_rows(loader, 1000, options);
    const auto from_a =
        std::count_if(rows.begin(), rows.end(), [](int32_t token) { return token < 3 * kStep; });
    // Low discrepancy: within a few rows of 70% after 4000 rows (binomial sampling would give +-29).
    EXPECT_NEAR(static_cast<double>(from_a), 0.7 * 4000, 4.0);
    DataLoader again(options);
    EXPECT_EQ(next_rows(again, 1000, options), rows);

    DataLoader first(options);
    next_rows(first, 137, options);
    const LoaderState state = first.state();
    EXPECT_EQ(state.source_rows.size(), 2u);
    DataLoader resumed(options);
    resumed.restore(LoaderState::from_vector(state.to_vector()));
    const std::vector<int32_t> rest = next_rows(resumed, 50, options);
    EXPECT_TRUE(std::equal(rest.begin(), rest.end(), rows.begin() + 137 * 4));

    // Two ranks: each global batch's rows, rank 0's then rank 1's, are the single rank's rows.
    LoaderOptions single = options;
    single.batch_size = 8;
    DataLoader one(single);
    const LoaderOptions rank0 = mixture_options(directory.file("a"), directory.file("b"), 0, 2);
    const LoaderOptions rank1 = mixture_options(directory.file("a"), directory.file("b"), 1, 2);
    DataLoader zero(rank0), other(rank1);
    for (int batch = 0; batch < 30; ++batch) {
        std::vector<int32_t> joined = next_rows(zero, 1, rank0);
        const std::vector<int32_t> second = next_rows(other, 1, rank1);
        joined.insert(joined.end(), second.begin(), second.end());
        EXPECT_EQ(joined, next_rows(one, 1, single)) << "batch " << batch;
    }
}

// A mixture's position saved with global batches of 8 rows continues with global batches of 4
// (another rank count or batch size) on exactly the rows that come next.
TEST(DatasetMixture, APositionMovesToAnotherGlobalBatch) {
    TempDirectory directory;
    testing::write_counting_folder(directory.file("a"), {800}, 1 << 20, 1000);
    testing::write_counting_folder(directory.file("b"), {300}, 1 << 20, 1000, 500000);
    LoaderOptions eight = mixture_options(directory.file("a"), directory.file("b"), 0, 1);
    eight.batch_size = 8;
    DataLoader saved(eight);
    next_rows(saved, 3, eight);
    const std::vector<int32_t> expected = next_rows(saved, 4, eight);  // rows 24 .. 55
    DataLoader fresh(eight);
    next_rows(fresh, 3, eight);
    LoaderOptions four = eight;
    four.batch_size = 4;
    DataLoader moved(four);
    const LoaderState state = rebatch_loader_state(fresh.state(), moved.state());
    EXPECT_EQ(state.next_batch, 6);
    EXPECT_EQ(state.source_rows, fresh.state().source_rows);
    moved.restore(state);
    EXPECT_EQ(next_rows(moved, 8, four), expected);
}

// A training run on a mixture stopped by SIGTERM and resumed equals the straight run
// (tests/train_equivalence.h), the loader's per-dataset row counts coming back from the checkpoint.
TEST(DatasetMixture, ATrainingRunOnAMixtureResumesExactly) {
    TempDirectory directory;
    const std::string copy = directory.file("copy");
    fs::copy(testing_support::tiny_dataset().directory, copy);
    TrainOptions options = testing_support::tiny_train_options(directory.file("unused"));
    options.threads = 1;
    set_datasets(options, {testing_support::tiny_dataset().dataset_path + ":0.75", copy + ":0.25"}, "");
    ASSERT_EQ(options.mixture.size(), 2u);
    testing_support::expect_resume_equals_straight_run(options, "mixgpt_mixture_resume");
}

TEST(DatasetMixture, DatasetsOfAnotherTokenizerAreRefusedInOneLine) {
    TempDirectory directory;
    testing::write_counting_folder(directory.file("a"), {100}, 1 << 20, 1000);
    testing::write_counting_dataset(directory.file("other.h5"), 100, 1 << 20, "another-tokenizer");
    const std::string message = test::error_of(
        [&] { DataLoader loader(mixture_options(directory.file("a"), directory.file("other.h5"), 0, 1)); });
    EXPECT_EQ(message.find('\n'), std::string::npos);
    EXPECT_EQ(message.rfind(directory.file("other.h5") + ": made with tokenizer sentencepiece", 0), 0u)
        << message;
    EXPECT_NE(message.find("must share one tokenizer"), std::string::npos) << message;
}

TEST(DocumentSplit, EveryStretchOfDocumentsHoldsItsShare) {
    for (double fraction : {0.05, 0.2, 0.5, 0.9}) {
        const int64_t block = static_cast<int64_t>(std::ceil(1 / fraction));
        int64_t since_validation = 0, validation = 0;
        for (int64_t d = 0; d < 20000; ++d) {
            const bool val = split_of_document(9, d, fraction) == Split::val;
            validation += val ? 1 : 0;
            since_validation = val ? 0 : since_validation + 1;
            ASSERT_LT(since_validation, 2 * block) << fraction << " " << d;
        }
        EXPECT_NEAR(static_cast<double>(validation), 20000 * fraction, 1.0) << fraction;
    }
}

}  // namespace
}  // namespace mixgpt
