// The data loader of `train` and `eval`: (B, T+1) token windows of one split
// of a token dataset (tokenizer/dataset.h), in the order of
// tokenizer/window_order.h, sharded over data-parallel ranks.
//
// Checks at open: the dataset's format, its tokenizer hash against the
// expected one, and that the split holds at least T+1 tokens (and, in train
// mode, one global batch). Token ids are checked against the vocabulary
// limit chunk by chunk as they are read (tokenizer/token_store.h).
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

struct LoaderOptions {
    std::string dataset_path;
    std::string split = "train";  // "train" or "val"
    int batch_size = 4;           // B (per rank)
    int seq_len = 64;             // T
    LoaderMode mode = LoaderMode::train;
    uint64_t seed = 0;
    int rank = 0, world_size = 1;
    bool prefetch = true;                   // background thread
    std::string expected_tokenizer_sha256;  // empty: not checked
    int vocab_limit = 0;                    // token ids must be < this (0: the dataset's vocab size)
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
struct LoaderState {
    int64_t epoch = 0;
    int64_t next_batch = 0;  // global batch index within the epoch
    uint64_t seed = 0;
    int64_t windows = 0;
    int64_t global_batch = 0;

    std::vector<int64_t> to_vector() const;  // {epoch, next_batch, seed, windows, global_batch}
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
    int64_t windows_per_epoch() const;       // whole split, all ranks
    int64_t batches_per_epoch() const;       // per rank
    LoaderState state() const;               // the state AFTER the last batch returned
    void restore(const LoaderState& state);  // the next batch is exactly what an uninterrupted run gives
    const DatasetInfo& info() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace mixgpt
