// The data loader (tokenizer/loader.h, window_order.h, token_store.h) on
// counting datasets, where token p is p, so each row shows which window it is.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "core/error.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"
#include "tokenizer/document_split.h"
#include "tokenizer/loader.h"
#include "tokenizer/window_order.h"

namespace mixgpt {
namespace {

using test::TempDirectory;

constexpr int kVocab = 1 << 20;

struct Dataset {
    TempDirectory directory;
    std::string path;
    explicit Dataset(int64_t tokens, int vocab_size = kVocab) : path(directory.file("counting.h5")) {
        testing::write_counting_dataset(path, tokens, vocab_size);
    }
};

LoaderOptions options_for(const std::string& path, int batch_size, int seq_len, LoaderMode mode) {
    LoaderOptions options;
    options.dataset_path = path;
    options.batch_size = batch_size;
    options.seq_len = seq_len;
    options.mode = mode;
    options.seed = 17;
    return options;
}

// The window index of each row, checking that the row is that window: tokens
// [w*T, w*T + T] of the counting dataset.
std::vector<int64_t> windows_of(const Batch& batch, const LoaderOptions& options) {
    std::vector<int64_t> windows;
    const int T = options.seq_len;
    for (int row = 0; row < options.batch_size; ++row) {
        const int32_t* tokens = batch.tokens + static_cast<size_t>(row) * (T + 1);
        EXPECT_EQ(tokens[0] % T, 0);
        for (int t = 0; t <= T; ++t) EXPECT_EQ(tokens[t], tokens[0] + t) << "row " << row;
        windows.push_back(tokens[0] / T);
    }
    return windows;
}

// The windows of the next `count` batches (rows beyond `rows` included).
std::vector<int64_t> next_windows(DataLoader& loader, const LoaderOptions& options, int64_t count) {
    std::vector<int64_t> windows;
    Batch batch;
    for (int64_t i = 0; i < count; ++i) {
        EXPECT_TRUE(loader.next(batch));
        for (int64_t window : windows_of(batch, options)) windows.push_back(window);
    }
    return windows;
}

// The documented order (tokenizer/window_order.h), written out again here.
std::vector<int64_t> documented_permutation(int64_t windows, uint64_t seed, int64_t epoch) {
    std::vector<int64_t> order(static_cast<size_t>(windows));
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 engine(splitmix64(seed ^ splitmix64(static_cast<uint64_t>(epoch))));
    for (int64_t i = windows - 1; i > 0; --i) {
        const uint64_t bound = static_cast<uint64_t>(i) + 1;
        uint64_t value = engine();
        while (value < (0 - bound) % bound) value = engine();
        std::swap(order[static_cast<size_t>(i)], order[value % bound]);
    }
    return order;
}

TEST(LoaderTrain, EachEpochVisitsItsWindowsOnceInTheDocumentedOrder) {
    const int T = 8, B = 3;
    Dataset dataset(37 * T + 5);  // W = 37: 12 batches of 3 per epoch, one window left over
    LoaderOptions options = options_for(dataset.path, B, T, LoaderMode::train);
    options.prefetch = false;
    DataLoader loader(options);
    ASSERT_EQ(loader.windows_per_epoch(), 37);
    ASSERT_EQ(loader.batches_per_epoch(), 12);
    std::set<std::vector<int64_t>> orders;
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
        Batch batch;
        std::vector<int64_t> seen;
        for (int64_t b = 0; b < 12; ++b) {
            ASSERT_TRUE(loader.next(batch));
            EXPECT_EQ(batch.epoch, epoch);
            EXPECT_EQ(batch.rows, B);
            for (int64_t window : windows_of(batch, options)) seen.push_back(window);
        }
        std::vector<int64_t> expected = documented_permutation(37, 17, epoch);
        expected.resize(36);
        EXPECT_EQ(seen, expected);
        std::vector<int64_t> unique = seen;
        std::sort(unique.begin(), unique.end());
        EXPECT_EQ(std::adjacent_find(unique.begin(), unique.end()), unique.end());
        orders.insert(seen);
    }
    EXPECT_EQ(orders.size(), 3u);  // epochs are shuffled differently
}

TEST(LoaderTrain, ThePermutationIsUniform) {
    // Over many epochs each window lands at each position about equally often
    // (chi-square on the position of window 0 among 5).
    const int epochs = 5000;
    std::vector<int> counts(5, 0);
    for (int epoch = 0; epoch < epochs; ++epoch) {
        const std::vector<int64_t> order = epoch_permutation(5, 1, epoch);
        counts[static_cast<size_t>(std::find(order.begin(), order.end(), 0) - order.begin())]++;
    }
    double chi_square = 0;
    for (int count : counts) chi_square += (count - epochs / 5.0) * (count - epochs / 5.0) / (epochs / 5.0);
    EXPECT_LT(chi_square, 18.47);  // the 0.999 quantile of chi-square with 4 degrees of freedom
}

TEST(LoaderTrain, RanksAreDisjointAndTheirUnionIsTheSingleRankOrder) {
    const int T = 4;
    Dataset dataset(50 * T + 1);
    LoaderOptions single = options_for(dataset.path, 4, T, LoaderMode::train);
    DataLoader whole(single);
    LoaderOptions rank_options[2];
    std::unique_ptr<DataLoader> ranks[2];
    for (int r = 0; r < 2; ++r) {
        rank_options[r] = options_for(dataset.path, 2, T, LoaderMode::train);
        rank_options[r].rank = r;
        rank_options[r].world_size = 2;
        ranks[r] = std::make_unique<DataLoader>(rank_options[r]);
        EXPECT_EQ(ranks[r]->batches_per_epoch(), whole.batches_per_epoch());
    }
    for (int step = 0; step < 3 * whole.batches_per_epoch(); ++step) {
        const std::vector<int64_t> expected = next_windows(whole, single, 1);
        const std::vector<int64_t> first = next_windows(*ranks[0], rank_options[0], 1);
        const std::vector<int64_t> second = next_windows(*ranks[1], rank_options[1], 1);
        std::vector<int64_t> joined = first;
        joined.insert(joined.end(), second.begin(), second.end());
        ASSERT_EQ(joined, expected) << "step " << step;
        for (int64_t window : first) EXPECT_EQ(std::count(second.begin(), second.end(), window), 0);
    }
}

TEST(LoaderTrain, PrefetchGivesTheSameBatchesAsSynchronousReading) {
    const int T = 16, B = 5;
    Dataset dataset(100 * T + 3);
    LoaderOptions synchronous = options_for(dataset.path, B, T, LoaderMode::train);
    synchronous.prefetch = false;
    LoaderOptions prefetching = synchronous;
    prefetching.prefetch = true;
    DataLoader a(synchronous), b(prefetching);
    EXPECT_EQ(next_windows(a, synchronous, 60), next_windows(b, prefetching, 60));  // three epochs
}

TEST(LoaderTrain, ResumingGivesWhatAnUninterruptedRunGives) {
    const int T = 8, B = 2;
    Dataset dataset(29 * T + 1);  // 14 batches per epoch
    for (bool prefetch : {false, true}) {
        LoaderOptions options = options_for(dataset.path, B, T, LoaderMode::train);
        options.prefetch = prefetch;
        DataLoader uninterrupted(options);
        for (int64_t stop : {0, 5, 13, 14, 20}) {
            DataLoader first(options);
            next_windows(first, options, stop);
            const LoaderState state = LoaderState::from_vector(first.state().to_vector());
            EXPECT_EQ(state.epoch, stop / 14);
            EXPECT_EQ(state.next_batch, stop % 14);
            LoaderOptions other_seed = options;
            other_seed.seed = 99;  // the state's seed wins
            DataLoader resumed(other_seed);
            resumed.restore(state);
            DataLoader reference(options);
            next_windows(reference, options, stop);
            EXPECT_EQ(next_windows(resumed, options, 20), next_windows(reference, options, 20))
                << "stop " << stop << " prefetch " << prefetch;
        }
        next_windows(uninterrupted, options, 3);
        uninterrupted.restore(
            LoaderState::from_vector({0, 0, 17, 29, 2}));  // back to the start, mid-prefetch
        DataLoader fresh(options);
        EXPECT_EQ(next_windows(uninterrupted, options, 16), next_windows(fresh, options, 16));
    }
}

TEST(LoaderTrain, RestoreRefusesStatesOfOtherBatchingOrData) {
    const int T = 8;
    Dataset dataset(40 * T + 1);
    DataLoader loader(options_for(dataset.path, 2, T, LoaderMode::train));
    const LoaderState state = loader.state();
    EXPECT_EQ(state.windows, 40);
    EXPECT_EQ(state.global_batch, 2);
    LoaderState other = state;
    other.global_batch = 4;
    EXPECT_THROW(loader.restore(other), Error);
    other = state;
    other.windows = 41;
    EXPECT_THROW(loader.restore(other), Error);
    other = state;
    other.next_batch = loader.batches_per_epoch();
    EXPECT_THROW(loader.restore(other), Error);
    EXPECT_THROW(LoaderState::from_vector({1, 2, 3}), Error);
}

TEST(LoaderEval, CoversTheSplitInOrderWithAPartialLastBatchInLockStep) {
    const int T = 4, B = 3;
    Dataset dataset(13 * T + 2);  // W = 13 windows; global batch 6: batches of 6, 6, 1
    std::vector<int64_t> union_of_ranks;
    std::vector<int> true_calls;
    for (int r = 0; r < 2; ++r) {
        LoaderOptions options = options_for(dataset.path, B, T, LoaderMode::eval);
        options.rank = r;
        options.world_size = 2;
        DataLoader loader(options);
        EXPECT_EQ(loader.batches_per_epoch(), 3);
        Batch batch;
        std::vector<int> rows;
        while (loader.next(batch)) {
            const std::vector<int64_t> windows = windows_of(batch, options);
            rows.push_back(batch.rows);
            for (int row = 0; row < batch.rows; ++row)
                union_of_ranks.push_back(windows[static_cast<size_t>(row)]);
            for (int row = std::max(batch.rows, 1); row < B; ++row)
                EXPECT_EQ(windows[static_cast<size_t>(row)],
                          batch.rows > 0 ? windows[static_cast<size_t>(batch.rows) - 1] : 12);
        }
        EXPECT_FALSE(loader.next(batch));
        EXPECT_EQ(rows, (r == 0 ? std::vector<int>{3, 3, 1} : std::vector<int>{3, 3, 0}));
        true_calls.push_back(static_cast<int>(rows.size()));
    }
    EXPECT_EQ(true_calls[0], true_calls[1]);
    std::sort(union_of_ranks.begin(), union_of_ranks.end());
    std::vector<int64_t> all(13);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(union_of_ranks, all);
}

TEST(LoaderEval, SingleRankReadsWindowsSequentiallyWithAndWithoutPrefetch) {
    const int T = 5, B = 4;
    Dataset dataset(10 * T + 1);
    for (bool prefetch : {false, true}) {
        LoaderOptions options = options_for(dataset.path, B, T, LoaderMode::eval);
        options.prefetch = prefetch;
        options.split = "val";
        DataLoader loader(options);
        const std::vector<int64_t> windows = next_windows(loader, options, 3);
        EXPECT_EQ(windows, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9}));
        Batch batch;
        EXPECT_FALSE(loader.next(batch));
        EXPECT_EQ(loader.state().next_batch, 3);
    }
}

TEST(LoaderStaging, BuffersComeFromTheGivenAllocator) {
    const int T = 4;
    Dataset dataset(20 * T + 1);
    for (bool prefetch : {false, true}) {
        LoaderOptions options = options_for(dataset.path, 2, T, LoaderMode::train);
        options.prefetch = prefetch;
        std::vector<size_t> requests;
        options.allocate_staging = [&requests](size_t bytes) {
            requests.push_back(bytes);
            return Buffer::host(bytes);
        };
        DataLoader loader(options);
        next_windows(loader, options, 4);
        EXPECT_EQ(requests.size(), prefetch ? 3u : 1u);
        for (size_t bytes : requests) EXPECT_EQ(bytes, sizeof(int32_t) * 2 * (T + 1));
    }
}

void expect_open_error(const LoaderOptions& options, const std::string& fragment) {
    try {
        DataLoader loader(options);
        FAIL() << "expected an error";
    } catch (const Error& error) {
        const std::string message = error.what();
        EXPECT_EQ(message.rfind(options.dataset_path, 0), 0u) << message;
        EXPECT_NE(message.find(fragment), std::string::npos) << message;
    }
}

TEST(LoaderErrors, ShortSplitsOtherTokenizersAndBadFiles) {
    Dataset dataset(64);
    expect_open_error(options_for(dataset.path, 1, 64, LoaderMode::eval),
                      "has 64 tokens, fewer than seq_len + 1 = 65");
    expect_open_error(options_for(dataset.path, 8, 9, LoaderMode::train), "fewer than one global batch");
    LoaderOptions other = options_for(dataset.path, 1, 8, LoaderMode::train);
    other.expected_tokenizer_sha256 = "0123456789abcdef";
    expect_open_error(other, "a dataset made with another tokenizer");
    LoaderOptions bad_rank = options_for(dataset.path, 1, 8, LoaderMode::train);
    bad_rank.rank = 2;
    bad_rank.world_size = 2;
    expect_open_error(bad_rank, "rank 2");

    const std::string complete = testing::read_file(dataset.path);
    LoaderOptions truncated =
        options_for(dataset.directory.write("truncated.h5", complete.substr(0, complete.size() / 2)), 1, 8,
                    LoaderMode::train);
    expect_open_error(truncated, "truncated");
    LoaderOptions text = options_for(dataset.directory.write("text.h5", "hello"), 1, 8, LoaderMode::train);
    expect_open_error(text, "not an HDF5 file");
}

TEST(LoaderErrors, TokenIdsAreCheckedChunkByChunkAsRead) {
    // Ids are positions: only the second HDF5 chunk holds ids >= the limit, so
    // opening succeeds and the error comes with the first batch that reads it.
    const int64_t chunk = kTokenChunkElements;
    const int T = 1024, B = 8;
    Dataset dataset(chunk + 20 * T);
    for (bool prefetch : {false, true}) {
        LoaderOptions options = options_for(dataset.path, B, T, LoaderMode::eval);
        options.prefetch = prefetch;
        options.vocab_limit = static_cast<int>(chunk + 10);
        DataLoader loader(options);
        Batch batch;
        int64_t good_batches = 0;
        try {
            while (loader.next(batch)) ++good_batches;
            FAIL() << "expected an error";
        } catch (const Error& error) {
            const std::string message = error.what();
            EXPECT_EQ(message.rfind(dataset.path, 0), 0u) << message;
            EXPECT_NE(message.find("/train/tokens[" + std::to_string(chunk + 10) + "]"), std::string::npos)
                << message;
        }
        // Window chunk/T - 1 ends on position `chunk`, the first of the second chunk.
        EXPECT_EQ(good_batches, (chunk / T - 1) / B);
    }
}

}  // namespace
}  // namespace mixgpt
