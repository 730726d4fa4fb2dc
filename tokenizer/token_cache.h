// The tokens of recently seen text pieces (words, units), so that a tokenizer's slow path runs
// once per distinct piece instead of once per occurrence. An open-addressing hash table
// (linear probing, power-of-two size, at most half full) over keys and tokens stored back to
// back; it empties itself when it holds `max_entries` pieces. Not thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace mixgpt {

class TokenCache {
public:
    static constexpr size_t kMaxKeyBytes = 64;  // longer pieces are rare: not cached

    explicit TokenCache(size_t max_entries);

    // Appends the tokens cached for `key` to `ids`; false when `key` is not cached.
    bool append_cached(std::string_view key, std::vector<int32_t>& ids) const {
        const uint64_t hash = hash_of(key);
        for (size_t slot = hash & mask_;; slot = (slot + 1) & mask_) {
            const Slot& entry = slots_[slot];
            if (entry.token_count == kEmpty) return false;
            if (entry.hash == hash && entry.key_length == key.size() &&
                std::memcmp(keys_.data() + entry.key_offset, key.data(), key.size()) == 0) {
                const int32_t* tokens = tokens_.data() + entry.token_offset;
                ids.insert(ids.end(), tokens, tokens + entry.token_count);
                return true;
            }
        }
    }
    // Stores the tokens of `key` (at most kMaxKeyBytes, not cached yet).
    void insert(std::string_view key, const int32_t* tokens, size_t count);

private:
    static constexpr uint32_t kEmpty = UINT32_MAX;  // token_count of an empty slot
    struct Slot {
        uint64_t hash;
        uint32_t key_offset, key_length;
        uint32_t token_offset, token_count;
    };
    // A multiply-xorshift hash, eight bytes at a time.
    static uint64_t hash_of(std::string_view key) {
        uint64_t hash = 0x9E3779B97F4A7C15ull ^ key.size();
        const char* bytes = key.data();
        size_t left = key.size();
        for (; left >= 8; bytes += 8, left -= 8) {
            uint64_t word;
            std::memcpy(&word, bytes, 8);
            hash = (hash ^ word) * 0xBF58476D1CE4E5B9ull;
            hash ^= hash >> 31;
        }
        uint64_t tail = 0;
        std::memcpy(&tail, bytes, left);
        hash = (hash ^ tail) * 0x94D049BB133111EBull;
        return hash ^ (hash >> 29);
    }
    void resize(size_t slot_count);

    size_t max_entries_;
    size_t entries_ = 0;
    size_t mask_ = 0;
    std::vector<Slot> slots_;
    std::vector<char> keys_;       // the keys, back to back
    std::vector<int32_t> tokens_;  // the tokens, back to back
};

}  // namespace mixgpt
