// The tokens of recently seen text pieces (words, units), so that a tokenizer's slow path runs
// once per distinct piece instead of once per occurrence. Keys are copied into large blocks;
// the cache empties itself when it holds `max_entries` pieces. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mixgpt {

class TokenCache {
public:
    static constexpr size_t kMaxKeyBytes = 64;  // longer pieces are rare: not cached

    explicit TokenCache(size_t max_entries);

    // Appends the tokens cached for `key` to `ids`; false when `key` is not cached.
    bool append_cached(std::string_view key, std::vector<int32_t>& ids) const {
        const auto found = entries_.find(key);
        if (found == entries_.end()) return false;
        const int32_t* tokens = tokens_.data() + found->second.offset;
        ids.insert(ids.end(), tokens, tokens + found->second.count);
        return true;
    }
    // Stores the tokens of `key` (at most kMaxKeyBytes, not cached yet).
    void insert(std::string_view key, const int32_t* tokens, size_t count);

private:
    struct TokenSpan {
        uint32_t offset;
        uint32_t count;
    };
    std::string_view store_key(std::string_view key);
    void clear();

    size_t max_entries_;
    std::unordered_map<std::string_view, TokenSpan> entries_;  // keys point into key_blocks_
    std::vector<std::unique_ptr<char[]>> key_blocks_;
    size_t key_block_used_ = 0;
    std::vector<int32_t> tokens_;  // the spans' tokens, back to back
};

}  // namespace mixgpt
