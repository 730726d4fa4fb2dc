#include "tokenizer/loader.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/token_store.h"
#include "tokenizer/window_order.h"

namespace mixgpt {
namespace {

constexpr size_t kPrefetchSlots = 3;  // one held by the caller, two filled ahead

struct Position {
    int64_t epoch = 0;
    int64_t batch = 0;  // global batch index within the epoch
};

// Fills one rank's rows of a global batch (tokenizer/window_order.h). Used by
// one thread at a time.
class BatchFiller {
public:
    BatchFiller(const LoaderOptions& options, TokenStore& store, int64_t windows, int64_t batches)
        : options_(options), store_(store), windows_(windows), batches_(batches) {}

    bool train() const { return options_.mode == LoaderMode::train; }
    bool ended(Position position) const { return !train() && position.batch >= batches_; }
    Position advance(Position position) const {
        if (++position.batch == batches_ && train()) position = {position.epoch + 1, 0};
        return position;
    }
    void set_seed(uint64_t seed) {
        seed_ = seed;
        permutation_epoch_ = -1;
    }

    // Writes the (B, T+1) rows of `position` into `tokens`; returns the real rows.
    int fill(Position position, int32_t* tokens) {
        const int64_t rows_per_batch = options_.batch_size, row_tokens = options_.seq_len + 1;
        const int64_t first =
            position.batch * options_.world_size * rows_per_batch + options_.rank * rows_per_batch;
        const int rows = static_cast<int>(std::clamp<int64_t>(windows_ - first, 0, rows_per_batch));
        if (train() && permutation_epoch_ != position.epoch) {
            permutation_ = epoch_permutation(windows_, seed_, position.epoch);
            permutation_epoch_ = position.epoch;
        }
        for (int row = 0; row < rows; ++row) {
            const int64_t window = train() ? permutation_[static_cast<size_t>(first + row)] : first + row;
            store_.read(window * options_.seq_len, row_tokens, tokens + row * row_tokens);
        }
        for (int64_t row = rows; row < rows_per_batch; ++row) {
            if (rows > 0) {
                std::memcpy(tokens + row * row_tokens, tokens + (rows - 1) * row_tokens,
                            sizeof(int32_t) * row_tokens);
            } else {
                store_.read((windows_ - 1) * options_.seq_len, row_tokens, tokens + row * row_tokens);
            }
        }
        return rows;
    }

private:
    const LoaderOptions& options_;
    TokenStore& store_;
    int64_t windows_, batches_;
    uint64_t seed_ = 0;
    std::vector<int64_t> permutation_;  // (W,) of permutation_epoch_
    int64_t permutation_epoch_ = -1;
};

struct FilledBatch {
    Position position;
    int rows = 0;
    const int32_t* tokens = nullptr;
};

// A thread that fills batches in order into a ring of buffers, from `start` on.
class Prefetcher {
public:
    Prefetcher(BatchFiller& filler, std::vector<Buffer>& buffers, Position start)
        : filler_(filler), buffers_(buffers), filled_(buffers.size()), position_(start) {
        for (size_t slot = 0; slot < buffers_.size(); ++slot) free_.push_back(slot);
        thread_ = std::thread([this] { produce(); });
    }

    ~Prefetcher() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        changed_.notify_all();
        thread_.join();
    }

    // The next batch, or false at the end of an eval pass. The batch returned
    // before is released (its buffer is refilled).
    bool next(FilledBatch& batch) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (held_ != kNone) {
            free_.push_back(held_);
            held_ = kNone;
            changed_.notify_all();
        }
        changed_.wait(lock, [this] { return !ready_.empty() || finished_ || failure_; });
        if (ready_.empty()) {
            if (failure_) std::rethrow_exception(failure_);
            return false;
        }
        held_ = ready_.front();
        ready_.pop_front();
        batch = filled_[held_];
        return true;
    }

private:
    static constexpr size_t kNone = static_cast<size_t>(-1);

    void produce() {
        for (;;) {
            size_t slot = 0;
            Position position;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                changed_.wait(lock, [this] { return stop_ || !free_.empty(); });
                if (stop_) return;
                if (filler_.ended(position_)) {
                    finished_ = true;
                    changed_.notify_all();
                    return;
                }
                slot = free_.front();
                free_.pop_front();
                position = position_;
            }
            FilledBatch batch{position, 0, buffers_[slot].as<int32_t>()};
            try {
                batch.rows = filler_.fill(position, buffers_[slot].as<int32_t>());
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex_);
                failure_ = std::current_exception();
                changed_.notify_all();
                return;
            }
            {
                std::lock_guard<std::mutex> lock(mutex_);
                filled_[slot] = batch;
                ready_.push_back(slot);
                position_ = filler_.advance(position_);
            }
            changed_.notify_all();
        }
    }

    BatchFiller& filler_;
    std::vector<Buffer>& buffers_;
    std::vector<FilledBatch> filled_;  // (slots,)
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<size_t> free_, ready_;
    size_t held_ = kNone;
    Position position_;  // the next batch to fill
    bool stop_ = false, finished_ = false;
    std::exception_ptr failure_;
    std::thread thread_;
};

void check_options(const LoaderOptions& options) {
    const std::string& path = options.dataset_path;
    MIXGPT_REQUIRE(options.batch_size > 0 && options.seq_len > 0,
                   format("%s: batch_size (%d) and seq_len (%d) must be positive", path.c_str(),
                          options.batch_size, options.seq_len));
    MIXGPT_REQUIRE(
        options.world_size > 0 && options.rank >= 0 && options.rank < options.world_size,
        format("%s: rank %d is not in [0, world_size %d)", path.c_str(), options.rank, options.world_size));
    MIXGPT_REQUIRE(options.vocab_limit >= 0, path + ": vocab_limit must not be negative");
}

std::string short_hash(const std::string& hash) { return hash.substr(0, 12); }

}  // namespace

std::vector<int64_t> LoaderState::to_vector() const {
    return {epoch, next_batch, static_cast<int64_t>(seed), windows, global_batch};
}

LoaderState LoaderState::from_vector(const std::vector<int64_t>& values) {
    MIXGPT_REQUIRE(values.size() == 5, format("loader state has %zu values, expected 5 "
                                              "(epoch, next_batch, seed, windows, global_batch)",
                                              values.size()));
    LoaderState state;
    state.epoch = values[0];
    state.next_batch = values[1];
    state.seed = static_cast<uint64_t>(values[2]);
    state.windows = values[3];
    state.global_batch = values[4];
    return state;
}

struct DataLoader::Impl {
    LoaderOptions options;
    DatasetInfo info;
    int64_t windows = 0;
    int64_t batches = 0;
    int64_t global_batch = 0;
    uint64_t seed = 0;
    std::unique_ptr<TokenStore> store;
    std::unique_ptr<BatchFiller> filler;
    std::vector<Buffer> buffers;
    Position consumed;  // the next batch the caller gets
    std::unique_ptr<Prefetcher> prefetcher;

    explicit Impl(LoaderOptions loader_options) : options(std::move(loader_options)) {
        check_options(options);
        const std::string& path = options.dataset_path;
        info = read_dataset_info(path);
        const SplitInfo& split = info.split(options.split);
        if (!options.expected_tokenizer_sha256.empty() &&
            options.expected_tokenizer_sha256 != info.tokenizer_sha256)
            throw Error(path + ": made with tokenizer " + short_hash(info.tokenizer_sha256) +
                        "..., but the model's tokenizer is " + short_hash(options.expected_tokenizer_sha256) +
                        "... (a dataset made with another tokenizer)");
        MIXGPT_REQUIRE(
            split.tokens >= options.seq_len + 1,
            format("%s: split '%s' has %lld tokens, fewer than seq_len + 1 = %d", path.c_str(),
                   options.split.c_str(), static_cast<long long>(split.tokens), options.seq_len + 1));
        windows = window_count(split.tokens, options.seq_len);
        global_batch = int64_t{options.world_size} * options.batch_size;
        const bool train = options.mode == LoaderMode::train;
        batches = train ? windows / global_batch : (windows + global_batch - 1) / global_batch;
        MIXGPT_REQUIRE(batches > 0,
                       format("%s: split '%s' has %lld windows of %d tokens, fewer than one global "
                              "batch of world_size x batch_size = %lld",
                              path.c_str(), options.split.c_str(), static_cast<long long>(windows),
                              options.seq_len + 1, static_cast<long long>(global_batch)));
        const int32_t vocab_limit = options.vocab_limit > 0 ? options.vocab_limit : info.vocab_size;
        store = std::make_unique<TokenStore>(path, options.split, vocab_limit);
        filler = std::make_unique<BatchFiller>(options, *store, windows, batches);
        seed = options.seed;
        filler->set_seed(seed);
        const size_t bytes =
            sizeof(int32_t) * static_cast<size_t>(options.batch_size) * (options.seq_len + 1);
        for (size_t i = 0; i < (options.prefetch ? kPrefetchSlots : 1); ++i)
            buffers.push_back(options.allocate_staging ? options.allocate_staging(bytes)
                                                       : Buffer::host(bytes));
        start_prefetch();
    }

    void start_prefetch() {
        prefetcher.reset();
        if (options.prefetch) prefetcher = std::make_unique<Prefetcher>(*filler, buffers, consumed);
    }

    bool next(Batch& batch) {
        FilledBatch filled;
        if (prefetcher) {
            if (!prefetcher->next(filled)) return false;
        } else {
            if (filler->ended(consumed)) return false;
            filled.position = consumed;
            filled.tokens = buffers[0].as<int32_t>();
            filled.rows = filler->fill(consumed, buffers[0].as<int32_t>());
        }
        batch.tokens = filled.tokens;
        batch.rows = filled.rows;
        batch.epoch = filled.position.epoch;
        consumed = filler->advance(filled.position);
        return true;
    }

    void restore(const LoaderState& state) {
        const std::string& path = options.dataset_path;
        MIXGPT_REQUIRE(
            state.windows == windows && state.global_batch == global_batch,
            format("%s: the loader state is for %lld windows and global batches of %lld, but this loader "
                   "has %lld windows and global batches of %lld (another dataset, seq_len or batch size)",
                   path.c_str(), static_cast<long long>(state.windows),
                   static_cast<long long>(state.global_batch), static_cast<long long>(windows),
                   static_cast<long long>(global_batch)));
        const int64_t last_batch = options.mode == LoaderMode::train ? batches - 1 : batches;
        MIXGPT_REQUIRE(state.epoch >= 0 && state.next_batch >= 0 && state.next_batch <= last_batch,
                       format("%s: invalid loader state (epoch %lld, batch %lld of %lld)", path.c_str(),
                              static_cast<long long>(state.epoch), static_cast<long long>(state.next_batch),
                              static_cast<long long>(batches)));
        prefetcher.reset();
        seed = state.seed;
        filler->set_seed(seed);
        consumed = {state.epoch, state.next_batch};
        start_prefetch();
    }
};

DataLoader::DataLoader(LoaderOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
DataLoader::~DataLoader() = default;

bool DataLoader::next(Batch& batch) { return impl_->next(batch); }
int64_t DataLoader::windows_per_epoch() const { return impl_->windows; }
int64_t DataLoader::batches_per_epoch() const { return impl_->batches; }
LoaderState DataLoader::state() const {
    return {impl_->consumed.epoch, impl_->consumed.batch, impl_->seed, impl_->windows, impl_->global_batch};
}
void DataLoader::restore(const LoaderState& state) { impl_->restore(state); }
const DatasetInfo& DataLoader::info() const { return impl_->info; }

}  // namespace mixgpt
