// The windows of one split of one or more datasets, shard after shard.
//
// Shard s of the list (the datasets' shards in order) holds N_s tokens of the
// split and W_s = window_count(N_s, T) windows (tokenizer/window_order.h);
// window g of the split is window g - (W_0 + ... + W_{s-1}) of the shard s
// that holds it, i.e. tokens [i*T, i*T + T + 1) of that shard. So a window
// never spans two shards, and a dataset of one file has exactly the windows
// it had before shards existed.
//
// Document-aligned (LoaderOptions::align_documents, train's --align-documents): the windows of a
// shard start at its documents' first tokens instead, a document longer than T cut into windows
// T apart from its start: window starts off[d], off[d] + T, ... below off[d + 1] - 1 (never at the
// document's end-of-text token, so an empty document has none), each with its T + 1 tokens in the
// shard (/<split>/doc_offsets). A window's tail past a short document holds the
// documents after it, as unaligned windows do; consecutive windows overlap where documents are
// shorter than T.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/dataset.h"
#include "tokenizer/token_store.h"

namespace mixgpt {

class SplitWindows {
public:
    // Opens every shard holding tokens of the split (each checked against the count its dataset
    // records) and checks ids against vocab_limit as they are read. Throws Error naming the file.
    SplitWindows(const std::vector<DatasetInfo>& datasets, const std::string& split, int seq_len,
                 int32_t vocab_limit, bool align_documents = false);

    int64_t windows() const { return window_starts_.back(); }
    int seq_len() const { return seq_len_; }
    // Copies the T+1 tokens of `window` into out. Not thread-safe.
    void read(int64_t window, int32_t* out);

    // The shards as token streams (eval with a stride): their count, sizes and reads.
    size_t shard_count() const { return stores_.size(); }
    int64_t shard_tokens(size_t shard) const { return stores_[shard]->size(); }
    void read_tokens(size_t shard, int64_t offset, int64_t count, int32_t* out) {
        stores_[shard]->read(offset, count, out);
    }

private:
    int seq_len_;
    std::vector<std::unique_ptr<TokenStore>> stores_;  // shards with tokens of the split
    std::vector<int64_t> window_starts_;               // (shards + 1,) first window of each shard
    // Document-aligned: (shards,) the first token of each of the shard's windows; empty: i * T.
    std::vector<std::vector<int64_t>> token_starts_;
};

}  // namespace mixgpt
