#include "tokenizer/tokenizer.h"

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/gpt2_tokenizer.h"
#include "tokenizer/sentencepiece_tokenizer.h"

namespace mixgpt {

const char* tokenizer_kind_name(TokenizerKind kind) {
    return kind == TokenizerKind::gpt2 ? "gpt2" : "sentencepiece";
}

TokenizerKind parse_tokenizer_kind(const std::string& name) {
    if (name == "sentencepiece") return TokenizerKind::sentencepiece;
    if (name == "gpt2") return TokenizerKind::gpt2;
    throw Error("tokenizer kind '" + name + "' is not one of sentencepiece, gpt2");
}

Tokenizer Tokenizer::load(const std::string& path) {
    return load(path, is_gpt2_tokenizer_path(path) ? TokenizerKind::gpt2 : TokenizerKind::sentencepiece);
}

Tokenizer Tokenizer::load(const std::string& path, TokenizerKind kind) {
    if (kind == TokenizerKind::gpt2) return Tokenizer(Gpt2Tokenizer::load(path));
    return Tokenizer(SentencePieceTokenizer::load(path));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
    std::vector<int32_t> ids;
    make_encoder()->encode(text, ids);
    return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
    return decode(ids.data(), ids.size());
}

std::string Tokenizer::decode(const int32_t* ids, size_t count) const {
    std::string text;
    const int32_t vocab = vocab_size();
    for (size_t i = 0; i < count; ++i) {
        MIXGPT_REQUIRE(
            ids[i] >= 0 && ids[i] < vocab,
            format("token id %d is outside the vocabulary [0, %d) of %s", ids[i], vocab, path().c_str()));
        text += surface(ids[i]);
    }
    return text;
}

}  // namespace mixgpt
