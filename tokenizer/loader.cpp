#include "tokenizer/loader.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/dataset_index.h"
#include "tokenizer/mixture_order.h"
#include "tokenizer/split_windows.h"
#include "tokenizer/window_order.h"

namespace mixgpt {
namespace {

constexpr size_t kPrefetchSlots = 3;  // one held by the caller, two filled ahead

struct Position {
    int64_t epoch = 0;
    int64_t batch = 0;  // global batch index within the epoch
};

// Fills one rank's rows of a global batch (tokenizer/window_order.h,
// mixture_order.h). Used by one thread at a time.
class BatchFiller {
public:
    // `sources`: one SplitWindows (a single dataset, or a mixture in eval mode), or one per
    // source of a mixture in train mode (with `order`).
    BatchFiller(const LoaderOptions& options, std::vector<std::unique_ptr<SplitWindows>>& sources,
                const MixtureOrder* order, int64_t windows, int64_t batches)
        : options_(options),
          sources_(sources),
          order_(order),
          windows_(windows),
          batches_(batches),
          permutations_(sources.size()) {}

    bool train() const { return options_.mode == LoaderMode::train; }
    bool mixture() const { return order_ != nullptr; }
    bool ended(Position position) const { return !train() && position.batch >= batches_; }
    Position advance(Position position) const {
        if (++position.batch == batches_ && train() && !mixture()) position = {position.epoch + 1, 0};
        return position;
    }
    void set_seed(uint64_t seed) {
        seed_ = seed;
        for (Permutation& permutation : permutations_) permutation.epoch = -1;
    }
    // A mixture: the next batch filled is `batch`, with each source's rows drawn before it.
    void set_mixture_position(int64_t batch, std::vector<int64_t> source_rows) {
        mixture_batch_ = batch;
        source_rows_ = std::move(source_rows);
    }
    // Adds the sources of one global batch's rows to `source_rows`.
    void count_rows(int64_t batch, std::vector<int64_t>& source_rows) const {
        const int64_t global_batch = int64_t{options_.world_size} * options_.batch_size;
        for (int64_t n = batch * global_batch; n < (batch + 1) * global_batch; ++n)
            ++source_rows[order_->source_of(static_cast<uint64_t>(n))];
    }

    // Writes the (B, T+1) rows of `position` into `tokens`; returns the real rows.
    int fill(Position position, int32_t* tokens) {
        if (mixture()) return fill_mixture(position, tokens);
        const int64_t rows_per_batch = options_.batch_size, row_tokens = options_.seq_len + 1;
        const int64_t first =
            position.batch * options_.world_size * rows_per_batch + options_.rank * rows_per_batch;
        const int rows = static_cast<int>(std::clamp<int64_t>(windows_ - first, 0, rows_per_batch));
        SplitWindows& split = *sources_.front();
        for (int row = 0; row < rows; ++row) {
            const int64_t window =
                train() ? permuted(0, split.windows(), seed_, position.epoch, first + row) : first + row;
            split.read(window, tokens + row * row_tokens);
        }
        for (int64_t row = rows; row < rows_per_batch; ++row) {
            if (rows > 0)
                std::memcpy(tokens + row * row_tokens, tokens + (rows - 1) * row_tokens,
                            sizeof(int32_t) * row_tokens);
            else
                split.read(windows_ - 1, tokens + row * row_tokens);
        }
        return rows;
    }

private:
    struct Permutation {
        int64_t epoch = -1;
        std::vector<int64_t> order;  // (W,) of `epoch`
    };

    // Position `index` of the epoch's permutation of `windows` windows (cached per source).
    int64_t permuted(size_t source, int64_t windows, uint64_t seed, int64_t epoch, int64_t index) {
        Permutation& permutation = permutations_[source];
        if (permutation.epoch != epoch) {
            permutation.order = epoch_permutation(windows, seed, epoch);
            permutation.epoch = epoch;
        }
        return permutation.order[static_cast<size_t>(index)];
    }

    int fill_mixture(Position position, int32_t* tokens) {
        MIXGPT_REQUIRE(position.batch == mixture_batch_,
                       "data loader: mixture batches must be filled in order");
        const int64_t global_batch = int64_t{options_.world_size} * options_.batch_size;
        const int64_t mine = position.batch * global_batch + int64_t{options_.rank} * options_.batch_size;
        const int64_t row_tokens = options_.seq_len + 1;
        for (int64_t n = position.batch * global_batch; n < (position.batch + 1) * global_batch; ++n) {
            const size_t source = order_->source_of(static_cast<uint64_t>(n));
            const int64_t drawn = source_rows_[source]++;
            if (n < mine || n >= mine + options_.batch_size) continue;
            SplitWindows& split = *sources_[source];
            const int64_t windows = split.windows();
            const int64_t window = permuted(source, windows, MixtureOrder::source_seed(seed_, source),
                                            drawn / windows, drawn % windows);
            split.read(window, tokens + (n - mine) * row_tokens);
        }
        ++mixture_batch_;
        return options_.batch_size;
    }

    const LoaderOptions& options_;
    std::vector<std::unique_ptr<SplitWindows>>& sources_;
    const MixtureOrder* order_;
    int64_t windows_, batches_;
    uint64_t seed_ = 0;
    std::vector<Permutation> permutations_;  // (sources,)
    int64_t mixture_batch_ = 0;
    std::vector<int64_t> source_rows_;
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
    const std::string& path = options.mixture.empty() ? options.dataset_path : options.mixture.front().path;
    MIXGPT_REQUIRE(options.batch_size > 0 && options.seq_len > 0,
                   format("%s: batch_size (%d) and seq_len (%d) must be positive", path.c_str(),
                          options.batch_size, options.seq_len));
    MIXGPT_REQUIRE(
        options.world_size > 0 && options.rank >= 0 && options.rank < options.world_size,
        format("%s: rank %d is not in [0, world_size %d)", path.c_str(), options.rank, options.world_size));
    MIXGPT_REQUIRE(options.vocab_limit >= 0, path + ": vocab_limit must not be negative");
    MIXGPT_REQUIRE(options.mixture.size() != 1, path + ": a mixture needs two datasets or more");
}

std::string short_hash(const std::string& hash) { return hash.substr(0, 12); }

// The datasets, checked to share one tokenizer (and the expected one).
std::vector<DatasetInfo> open_datasets(const LoaderOptions& options) {
    std::vector<DatasetInfo> datasets;
    if (options.mixture.empty()) {
        datasets.push_back(read_dataset_info(options.dataset_path));
    } else {
        for (const DatasetSource& source : options.mixture)
            datasets.push_back(read_dataset_info(source.path));
    }
    for (const DatasetInfo& dataset : datasets) {
        if (!dataset.tokenizer.same_as(datasets.front().tokenizer))
            throw Error(dataset.path + ": made with tokenizer " + dataset.tokenizer.describe() + ", but " +
                        datasets.front().path + " with " + datasets.front().tokenizer.describe() +
                        " (the datasets of a mixture must share one tokenizer)");
        if (!options.expected_tokenizer_sha256.empty() &&
            options.expected_tokenizer_sha256 != dataset.tokenizer.sha256)
            throw Error(dataset.path + ": made with tokenizer " + short_hash(dataset.tokenizer.sha256) +
                        "..., but the model's tokenizer is " + short_hash(options.expected_tokenizer_sha256) +
                        "... (a dataset made with another tokenizer)");
        if (options.verify_data)
            for (const ShardInfo& shard : dataset.shards)
                if (!shard.sha256.empty()) check_shard_checksum(shard.path, shard.sha256);
    }
    return datasets;
}

}  // namespace

std::vector<int64_t> LoaderState::to_vector() const {
    std::vector<int64_t> values = {epoch, next_batch, static_cast<int64_t>(seed), windows, global_batch};
    values.insert(values.end(), source_rows.begin(), source_rows.end());
    return values;
}

LoaderState LoaderState::from_vector(const std::vector<int64_t>& values) {
    MIXGPT_REQUIRE(values.size() >= 5 && values.size() != 6,
                   format("loader state has %zu values, expected 5 (epoch, next_batch, seed, windows, "
                          "global_batch), and for a mixture one row count per dataset after them",
                          values.size()));
    LoaderState state;
    state.epoch = values[0];
    state.next_batch = values[1];
    state.seed = static_cast<uint64_t>(values[2]);
    state.windows = values[3];
    state.global_batch = values[4];
    state.source_rows.assign(values.begin() + 5, values.end());
    return state;
}

struct DataLoader::Impl {
    LoaderOptions options;
    std::vector<DatasetInfo> datasets;
    int64_t windows = 0;
    int64_t batches = 0;
    int64_t global_batch = 0;
    uint64_t seed = 0;
    std::vector<std::unique_ptr<SplitWindows>> sources;
    std::unique_ptr<MixtureOrder> order;  // a mixture in train mode
    std::unique_ptr<BatchFiller> filler;
    std::vector<Buffer> buffers;
    Position consumed;                   // the next batch the caller gets
    std::vector<int64_t> consumed_rows;  // a mixture: rows of each source before `consumed`
    std::unique_ptr<Prefetcher> prefetcher;

    explicit Impl(LoaderOptions loader_options) : options(std::move(loader_options)) {
        check_options(options);
        datasets = open_datasets(options);
        const std::string& path = datasets.front().path;
        const bool train = options.mode == LoaderMode::train;
        const int32_t vocab_limit =
            options.vocab_limit > 0 ? options.vocab_limit : datasets.front().vocab_size;
        if (train && datasets.size() > 1) {
            std::vector<double> weights;
            for (size_t k = 0; k < datasets.size(); ++k) {
                sources.push_back(std::make_unique<SplitWindows>(std::vector<DatasetInfo>{datasets[k]}, options.split,
                                                                 options.seq_len, vocab_limit, options.align_documents));
                require_windows({datasets[k]}, sources.back()->windows());
                weights.push_back(options.mixture[k].weight);
            }
            order = std::make_unique<MixtureOrder>(weights, options.seed);
            consumed_rows.assign(datasets.size(), 0);
        } else {
            sources.push_back(std::make_unique<SplitWindows>(datasets, options.split, options.seq_len, vocab_limit,
                                                             train && options.align_documents));
            require_windows(datasets, sources.back()->windows());
        }
        for (const auto& source : sources) windows += source->windows();
        global_batch = int64_t{options.world_size} * options.batch_size;
        batches = order   ? std::numeric_limits<int64_t>::max()
                  : train ? windows / global_batch
                          : (windows + global_batch - 1) / global_batch;
        MIXGPT_REQUIRE(batches > 0,
                       format("%s: split '%s' has %lld windows of %d tokens, fewer than one global "
                              "batch of world_size x batch_size = %lld",
                              path.c_str(), options.split.c_str(), static_cast<long long>(windows),
                              options.seq_len + 1, static_cast<long long>(global_batch)));
        filler = std::make_unique<BatchFiller>(options, sources, order.get(), windows, batches);
        seed = options.seed;
        filler->set_seed(seed);
        if (order) filler->set_mixture_position(0, consumed_rows);
        const size_t bytes =
            sizeof(int32_t) * static_cast<size_t>(options.batch_size) * (options.seq_len + 1);
        for (size_t i = 0; i < (options.prefetch ? kPrefetchSlots : 1); ++i)
            buffers.push_back(options.allocate_staging ? options.allocate_staging(bytes)
                                                       : Buffer::host(bytes));
        start_prefetch();
    }

    void require_windows(const std::vector<DatasetInfo>& read, int64_t split_windows) const {
        int64_t tokens = 0;
        for (const DatasetInfo& dataset : read) tokens += dataset.split(options.split).tokens;
        MIXGPT_REQUIRE(split_windows > 0,
                       format("%s: split '%s' has %lld tokens, fewer than seq_len + 1 = %d in every shard",
                              read.front().path.c_str(), options.split.c_str(),
                              static_cast<long long>(tokens), options.seq_len + 1));
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
        if (order) filler->count_rows(filled.position.batch, consumed_rows);
        consumed = filler->advance(filled.position);
        return true;
    }

    void restore(const LoaderState& state) {
        const std::string& path = datasets.front().path;
        MIXGPT_REQUIRE(
            state.windows == windows && state.global_batch == global_batch,
            format("%s: the loader state is for %lld windows and global batches of %lld, but this loader "
                   "has %lld windows and global batches of %lld (another dataset, seq_len, batch size or document "
                   "alignment)",
                   path.c_str(), static_cast<long long>(state.windows),
                   static_cast<long long>(state.global_batch), static_cast<long long>(windows),
                   static_cast<long long>(global_batch)));
        MIXGPT_REQUIRE(
            state.source_rows.size() == consumed_rows.size(),
            format("%s: the loader state is for a mixture of %zu datasets, this loader reads %zu",
                   path.c_str(), state.source_rows.size(), order ? consumed_rows.size() : size_t{1}));
        const int64_t last_batch = options.mode == LoaderMode::train ? batches - 1 : batches;
        MIXGPT_REQUIRE(state.epoch >= 0 && state.next_batch >= 0 && state.next_batch <= last_batch,
                       format("%s: invalid loader state (epoch %lld, batch %lld of %lld)", path.c_str(),
                              static_cast<long long>(state.epoch), static_cast<long long>(state.next_batch),
                              static_cast<long long>(batches)));
        prefetcher.reset();
        seed = state.seed;
        filler->set_seed(seed);
        consumed = {state.epoch, state.next_batch};
        consumed_rows = state.source_rows;
        if (order) filler->set_mixture_position(state.next_batch, consumed_rows);
        start_prefetch();
    }
};

DataLoader::DataLoader(LoaderOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
DataLoader::~DataLoader() = default;

bool DataLoader::next(Batch& batch) { return impl_->next(batch); }
int64_t DataLoader::windows_per_epoch() const { return impl_->windows; }
int64_t DataLoader::batches_per_epoch() const { return impl_->batches; }
LoaderState DataLoader::state() const {
    return {impl_->consumed.epoch, impl_->consumed.batch, impl_->seed,
            impl_->windows,        impl_->global_batch,   impl_->consumed_rows};
}
void DataLoader::restore(const LoaderState& state) { impl_->restore(state); }
const DatasetInfo& DataLoader::info() const { return impl_->datasets.front(); }

}  // namespace mixgpt
