#include "tokenizer/token_cache.h"

#include <cstring>

namespace mixgpt {
namespace {

constexpr size_t kKeyBlockBytes = size_t{1} << 20;

}  // namespace

TokenCache::TokenCache(size_t max_entries) : max_entries_(max_entries) {}

void TokenCache::insert(std::string_view key, const int32_t* tokens, size_t count) {
    if (entries_.size() >= max_entries_) clear();
    const TokenSpan span{static_cast<uint32_t>(tokens_.size()), static_cast<uint32_t>(count)};
    tokens_.insert(tokens_.end(), tokens, tokens + count);
    entries_.emplace(store_key(key), span);
}

std::string_view TokenCache::store_key(std::string_view key) {
    if (key_blocks_.empty() || key_block_used_ + key.size() > kKeyBlockBytes) {
        key_blocks_.push_back(std::make_unique<char[]>(kKeyBlockBytes));
        key_block_used_ = 0;
    }
    char* stored = key_blocks_.back().get() + key_block_used_;
    std::memcpy(stored, key.data(), key.size());
    key_block_used_ += key.size();
    return std::string_view(stored, key.size());
}

void TokenCache::clear() {
    entries_.clear();
    key_blocks_.clear();
    key_block_used_ = 0;
    tokens_.clear();
}

}  // namespace mixgpt
