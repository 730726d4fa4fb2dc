#include "tokenizer/gpt2_tokenizer.h"

#include "core/error.h"
#include "core/sha256.h"
#include "tokenizer/gpt2_pretokenizer.h"
#include "tokenizer/token_cache.h"

namespace mixgpt {
namespace {

constexpr size_t kMaxCachedPieces = size_t{1} << 20;

class Gpt2Encoder final : public TextEncoder {
public:
    explicit Gpt2Encoder(std::shared_ptr<const Gpt2Tokenizer> tokenizer)
        : tokenizer_(std::move(tokenizer)), bpe_(tokenizer_->bpe()), cache_(kMaxCachedPieces) {}

    size_t encode(std::string_view text, std::vector<int32_t>& ids) override {
        Gpt2PreTokenizer pieces(text);
        std::string_view piece;
        while (pieces.next(piece)) {
            if (piece.size() > TokenCache::kMaxKeyBytes) {
                bpe_.encode(piece, ids, scratch_);
            } else if (!cache_.append_cached(piece, ids)) {
                piece_ids_.clear();
                bpe_.encode(piece, piece_ids_, scratch_);
                cache_.insert(piece, piece_ids_.data(), piece_ids_.size());
                ids.insert(ids.end(), piece_ids_.begin(), piece_ids_.end());
            }
        }
        return pieces.invalid_bytes();
    }

private:
    std::shared_ptr<const Gpt2Tokenizer> tokenizer_;  // keeps bpe_ alive
    const Gpt2Bpe& bpe_;
    TokenCache cache_;
    Gpt2Bpe::Scratch scratch_;
    std::vector<int32_t> piece_ids_;
};

void append_hex(const std::string& bytes, std::string& out) {
    static constexpr char kDigits[] = "0123456789abcdef";
    for (char c : bytes) {
        out += kDigits[static_cast<unsigned char>(c) >> 4];
        out += kDigits[static_cast<unsigned char>(c) & 15];
    }
}

}  // namespace

Gpt2Tokenizer::Gpt2Tokenizer(std::vector<std::string> files, Gpt2Vocabulary vocabulary)
    : files_(std::move(files)), vocabulary_(std::move(vocabulary)), bpe_(vocabulary_) {
    const std::string canonical = canonical_gpt2_text(vocabulary_);
    sha256_ = sha256_hex(canonical.data(), canonical.size());
}

std::shared_ptr<const Gpt2Tokenizer> Gpt2Tokenizer::load(const std::string& path) {
    std::vector<std::string> files = find_gpt2_files(path);
    Gpt2Vocabulary vocabulary = read_gpt2_vocabulary(files);
    return std::shared_ptr<const Gpt2Tokenizer>(new Gpt2Tokenizer(std::move(files), std::move(vocabulary)));
}

std::unique_ptr<TextEncoder> Gpt2Tokenizer::make_encoder() const {
    return std::make_unique<Gpt2Encoder>(shared_from_this());
}

std::string canonical_gpt2_text(const Gpt2Vocabulary& vocabulary) {
    std::string text = "mixgpt gpt2 bpe 1\ntokens " + std::to_string(vocabulary.tokens.size()) + "\n";
    for (const std::string& token : vocabulary.tokens) {
        append_hex(token, text);
        text += '\n';
    }
    text += "merges " + std::to_string(vocabulary.merges.size()) + "\n";
    for (const auto& [left, right] : vocabulary.merges)
        text += std::to_string(left) + " " + std::to_string(right) + "\n";
    return text + "eot " + std::to_string(vocabulary.eot_id) + "\n";
}

std::shared_ptr<const Gpt2Tokenizer> gpt2_model(const Tokenizer& tokenizer) {
    MIXGPT_REQUIRE(
        tokenizer.kind() == TokenizerKind::gpt2,
        tokenizer.path() + ": a " + tokenizer_kind_name(tokenizer.kind()) + " tokenizer, not GPT-2's");
    return std::static_pointer_cast<const Gpt2Tokenizer>(tokenizer.model());
}

}  // namespace mixgpt
