// The data loader of `train` and `eval`: (B, T+1) token windows of one split
// of a token dataset (a file or a folder of shards: tokenizer/dataset.h,
// dataset_index.h), the windows of tokenizer/split_windows.h in the order of
// tokenizer/window_order.h, sharded over data-parallel ranks. Or a mixture of
// several datasets: in train mode each row comes from one of them in the
// proportions of their weights (tokenizer/mixture_order.h); in eval mode their
// splits are read one after the other.
//
// Checks at open: the datasets' formats, their tokenizer against the
// expected one and against each other, and that the split holds a window
// (and, in train mode, one global batch). Token ids are checked against the
// vocabulary limit chunk by chunk as they are read, and a dataset file that
// changes while it is read is an Error (tokenizer/token_store.h).
//
// With `prefetch`, a background thread fills up to two batches ahead into
// staging buffers from `allocate_staging` (pinned host memory on CUDA); the
// batches are the same as without it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "tokenizer/dataset.h"

namespace mixgpt {

enum class LoaderMode { train, eval };

struct DatasetSource {
    std::string path;
    double weight = 1;
};

struct LoaderOptions {
    std::string dataset_path;            // one dataset
    std::vector<DatasetSource> mixture;  // several, instead (two or more)
    std::string split = "train";         // "train" or "val"
    int batch_size = 4;                  // B (per rank)
    int seq_len = 64;                    // T
    LoaderMode mode = LoaderMode::train;
    uint64_t seed = 0;
    int rank = 0, world_size = 1;
    bool prefetch = true;                   // background thread
    std::string expected_tokenizer_sha256;  // empty: not checked
    int vocab_limit = 0;                    // token ids must be < this (0: the dataset's vocab size)
    bool verify_data = false;               // every shard's SHA-256 checked at open (else at its first read)
    bool align_documents = false;           // train mode: windows start at documents (tokenizer/split_windows.h)
    std::function<Buffer(size_t)>
        allocate_staging;  // host staging memory (pinned on CUDA); null: Buffer::host
};

struct Batch {
    const int32_t* tokens = nullptr;  // (B, T+1) row-major: inputs are [:, 0:T], targets [:, 1:T+1];
                                      // valid until the next call of next() or restore()
    int rows = 0;                     // real rows; < B only for the last batch in eval mode (the rest repeat
                                      // the last real row; with rows == 0, the split's last window)
    int64_t epoch = 0;
};

// Where a loader stands. `windows` and `global_batch` (world_size * B)
// identify the data and batching it belongs to; restore() refuses others.
// A mixture has no epochs (epoch 0, next_batch counts from the start) and
// records how many rows each source has given (tokenizer/mixture_order.h).
struct LoaderState {
    int64_t epoch = 0;
    int64_t next_batch = 0;  // global batch index within the epoch
    uint64_t seed = 0;
    int64_t windows = 0;  // of the split (a mixture: of all its sources)
    int64_t global_batch = 0;
    std::vector<int64_t> source_rows;  // a mixture: rows drawn from each source before next_batch

    // {epoch, next_batch, seed, windows, global_batch, source_rows...}
    std::vector<int64_t> to_vector() const;
    static LoaderState from_vector(const std::vector<int64_t>& values);  // throws Error on a wrong length
};

class DataLoader {
public:
    explicit DataLoader(LoaderOptions options);  // opens and validates; throws Error
    ~DataLoader();
    DataLoader(const DataLoader&) = delete;
    DataLoader& operator=(const DataLoader&) = delete;

    // Train mode: never ends (moves to the next epoch). Eval mode: returns
    // false after the split is covered; a rank whose share of the last global
    // batch is empty first returns a batch with rows == 0, keeping ranks in step.
    bool next(Batch& batch);
    int64_t windows_per_epoch() const;       // whole split, all ranks (a mixture: of all sources)
    int64_t batches_per_epoch() const;       // per rank (a mixture in train mode: no epochs, INT64_MAX)
    LoaderState state() const;               // the state AFTER the last batch returned
    void restore(const LoaderState& state);  // the next batch is exactly what an uninterrupted run gives
    const DatasetInfo& info() const;         // of the (first) dataset

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace mixgpt
