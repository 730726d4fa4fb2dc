#include "tokenizer/encoder.h"

#include <cstring>

#include "tokenizer/utf8.h"

namespace mixgpt {
namespace {

constexpr size_t kMaxCachedUnitBytes = 64;  // longer units are rare: encoded directly
constexpr size_t kKeyBlockBytes = size_t{1} << 20;

size_t unit_end(std::string_view text, size_t start) {
    if (text[start] == '\n') return start + 1;
    size_t end = start;
    while (end < text.size() && text[end] == ' ') ++end;
    while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
    return end;
}

}  // namespace

Encoder::Encoder(Tokenizer tokenizer, size_t max_cached_units)
    : tokenizer_(std::move(tokenizer)), max_cached_units_(max_cached_units) {}

size_t Encoder::encode(std::string_view text, std::vector<int32_t>& ids) {
    size_t invalid_bytes = 0;
    size_t position = 0;
    while (position < text.size()) {
        const size_t valid = utf8::valid_prefix_length(text.data() + position, text.size() - position);
        encode_valid(text.substr(position, valid), ids);
        position += valid;
        if (position < text.size()) {
            ids.push_back(tokenizer_.byte_id(static_cast<unsigned char>(text[position])));
            ++invalid_bytes;
            ++position;
        }
    }
    return invalid_bytes;
}

void Encoder::encode_valid(std::string_view text, std::vector<int32_t>& ids) {
    for (size_t start = 0; start < text.size();) {
        const size_t end = unit_end(text, start);
        const std::string_view unit = text.substr(start, end - start);
        if (unit.size() <= kMaxCachedUnitBytes) {
            encode_cached(unit, ids);
        } else {
            tokenizer_.encode_unit(unit, ids);
        }
        start = end;
    }
}

void Encoder::encode_cached(std::string_view unit, std::vector<int32_t>& ids) {
    auto found = cache_.find(unit);
    if (found == cache_.end()) {
        if (cache_.size() >= max_cached_units_) clear_cache();
        scratch_.clear();
        tokenizer_.encode_unit(unit, scratch_);
        const TokenSpan span{static_cast<uint32_t>(cached_tokens_.size()),
                             static_cast<uint32_t>(scratch_.size())};
        cached_tokens_.insert(cached_tokens_.end(), scratch_.begin(), scratch_.end());
        found = cache_.emplace(store_key(unit), span).first;
    }
    const int32_t* tokens = cached_tokens_.data() + found->second.offset;
    ids.insert(ids.end(), tokens, tokens + found->second.count);
}

std::string_view Encoder::store_key(std::string_view unit) {
    if (key_blocks_.empty() || key_block_used_ + unit.size() > kKeyBlockBytes) {
        key_blocks_.push_back(std::make_unique<char[]>(kKeyBlockBytes));
        key_block_used_ = 0;
    }
    char* key = key_blocks_.back().get() + key_block_used_;
    std::memcpy(key, unit.data(), unit.size());
    key_block_used_ += unit.size();
    return std::string_view(key, unit.size());
}

void Encoder::clear_cache() {
    cache_.clear();
    key_blocks_.clear();
    key_block_used_ = 0;
    cached_tokens_.clear();
}

}  // namespace mixgpt
