#include "tokenizer/encoder.h"

#include "tokenizer/utf8.h"

namespace mixgpt {
namespace {

size_t unit_end(std::string_view text, size_t start) {
    if (text[start] == '\n') return start + 1;
    size_t end = start;
    while (end < text.size() && text[end] == ' ') ++end;
    while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
    return end;
}

}  // namespace

Encoder::Encoder(std::shared_ptr<const SentencePieceTokenizer> tokenizer, size_t max_cached_units)
    : tokenizer_(std::move(tokenizer)), cache_(max_cached_units) {}

size_t Encoder::encode(std::string_view text, std::vector<int32_t>& ids) {
    size_t invalid_bytes = 0;
    size_t position = 0;
    while (position < text.size()) {
        const size_t valid = utf8::valid_prefix_length(text.data() + position, text.size() - position);
        encode_valid(text.substr(position, valid), ids);
        position += valid;
        if (position < text.size()) {
            ids.push_back(tokenizer_->byte_id(static_cast<unsigned char>(text[position])));
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
        if (unit.size() > TokenCache::kMaxKeyBytes) {
            tokenizer_->encode_unit(unit, ids);
        } else if (!cache_.append_cached(unit, ids)) {
            scratch_.clear();
            tokenizer_->encode_unit(unit, scratch_);
            cache_.insert(unit, scratch_.data(), scratch_.size());
            ids.insert(ids.end(), scratch_.begin(), scratch_.end());
        }
        start = end;
    }
}

}  // namespace mixgpt
