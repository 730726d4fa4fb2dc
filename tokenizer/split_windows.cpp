#include "tokenizer/split_windows.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/window_order.h"

namespace mixgpt {

namespace {

// The first token of each document-aligned window of a shard of `tokens` tokens (split_windows.h),
// from its /<split>/doc_offsets, checked: 0 first, `tokens` last, never decreasing.
std::vector<int64_t> document_window_starts(const ShardInfo& shard, const std::string& split, int64_t tokens,
                                            int seq_len) {
    const int64_t documents = shard.split(split).documents;
    std::vector<int64_t> offsets(static_cast<size_t>(documents + 1));
    const std::string name = "/" + split + "/doc_offsets";
    h5::File::open_read(shard.path).read(name, h5::Type::i64, offsets.data(), documents + 1);
    MIXGPT_REQUIRE(offsets.front() == 0 && offsets.back() == tokens &&
                       std::is_sorted(offsets.begin(), offsets.end()),
                   format("%s: %s: expected offsets rising from 0 to the split's %lld tokens", shard.path.c_str(),
                          name.c_str(), static_cast<long long>(tokens)));
    std::vector<int64_t> starts;
    for (size_t d = 0; d + 1 < offsets.size(); ++d)
        for (int64_t start = offsets[d]; start + 1 < offsets[d + 1] && start + seq_len < tokens; start += seq_len)
            starts.push_back(start);
    return starts;
}

}  // namespace

SplitWindows::SplitWindows(const std::vector<DatasetInfo>& datasets, const std::string& split, int seq_len,
                           int32_t vocab_limit, bool align_documents)
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
            if (align_documents) token_starts_.push_back(document_window_starts(shard, split, tokens, seq_len));
            const int64_t windows =
                align_documents ? static_cast<int64_t>(token_starts_.back().size()) : window_count(tokens, seq_len);
            window_starts_.push_back(window_starts_.back() + windows);
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
    const int64_t first = token_starts_.empty() ? local * seq_len_ : token_starts_[shard][static_cast<size_t>(local)];
    stores_[shard]->read(first, seq_len_ + 1, out);
}

}  // namespace mixgpt
