#include "tokenizer/token_cache.h"

namespace mixgpt {
namespace {

constexpr size_t kInitialSlots = size_t{1} << 12;

}  // namespace

TokenCache::TokenCache(size_t max_entries) : max_entries_(max_entries) { resize(kInitialSlots); }

void TokenCache::resize(size_t slot_count) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(slot_count, Slot{0, 0, 0, 0, kEmpty});
    mask_ = slot_count - 1;
    for (const Slot& entry : old) {
        if (entry.token_count == kEmpty) continue;
        size_t slot = entry.hash & mask_;
        while (slots_[slot].token_count != kEmpty) slot = (slot + 1) & mask_;
        slots_[slot] = entry;
    }
}

void TokenCache::insert(std::string_view key, const int32_t* tokens, size_t count) {
    if (entries_ >= max_entries_) {  // full: start again
        entries_ = 0;
        keys_.clear();
        tokens_.clear();
        slots_.clear();
        resize(kInitialSlots);
    } else if (2 * (entries_ + 1) > slots_.size()) {
        resize(2 * slots_.size());
    }
    const uint64_t hash = hash_of(key);
    size_t slot = hash & mask_;
    while (slots_[slot].token_count != kEmpty) slot = (slot + 1) & mask_;
    slots_[slot] = Slot{hash, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(key.size()),
                        static_cast<uint32_t>(tokens_.size()), static_cast<uint32_t>(count)};
    keys_.insert(keys_.end(), key.begin(), key.end());
    tokens_.insert(tokens_.end(), tokens, tokens + count);
    ++entries_;
}

}  // namespace mixgpt
