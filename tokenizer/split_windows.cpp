#include "tokenizer/split_windows.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/window_order.h"

namespace mixgpt {

SplitWindows::SplitWindows(const std::vector<DatasetInfo>& datasets, const std::string& split, int seq_len,
                           int32_t vocab_limit)
    : seq_len_(seq_len), window_starts_{0} {
    for (const DatasetInfo& dataset : datasets) {
        dataset.split(split);  // an unknown split name is an error
        for (const ShardInfo& shard : dataset.shards) {
            const int64_t tokens = shard.split(split).tokens;
            if (tokens == 0) continue;
            auto store = std::make_unique<TokenStore>(shard.path, split, vocab_limit, shard.sha256);
            if (store->size() != tokens)
                throw Error(shard.path +
                            format(": /%s/tokens holds %lld tokens, the dataset's index says %lld",
                                   split.c_str(), static_cast<long long>(store->size()),
                                   static_cast<long long>(tokens)));
            window_starts_.push_back(window_starts_.back() + window_count(tokens, seq_len));
            stores_.push_back(std::move(store));
        }
    }
}

void SplitWindows::read(int64_t window, int32_t* out) {
    MIXGPT_REQUIRE(window >= 0 && window < windows(),
                   format("window %lld is outside the split's %lld", static_cast<long long>(window),
                          static_cast<long long>(windows())));
    // The shard whose windows [start, next start) hold `window`.
    const auto next_start = std::upper_bound(window_starts_.begin(), window_starts_.end(), window);
    const auto shard = static_cast<size_t>(next_start - window_starts_.begin() - 1);
    const int64_t local = window - window_starts_[shard];
    stores_[shard]->read(local * seq_len_, seq_len_ + 1, out);
}

}  // namespace mixgpt
