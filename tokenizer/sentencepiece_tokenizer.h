// mixgpt's SentencePiece tokenizers (kind "sentencepiece" of tokenizer/tokenizer.h), made
// lossless: models trained by tokenizer/tokenizer_trainer.h with byte fallback and identity
// normalization. Encoding passes each valid UTF-8 run to SentencePiece and turns every byte of
// an invalid sequence into its byte-fallback token <0xXX>; decoding concatenates each token's
// surface text (byte tokens give their raw byte), so nothing is replaced by U+FFFD.
//
// <|endoftext|> is a control token: never produced from text, it decodes to "<|endoftext|>".
#pragma once

#include <sentencepiece_processor.h>

#include <array>
#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace mixgpt {

class SentencePieceTokenizer final : public TokenizerModel,
                                     public std::enable_shared_from_this<SentencePieceTokenizer> {
public:
    // Loads and validates a model: it must have byte fallback for all 256 bytes, an end-of-text
    // token, lossless normalization and no piece that spans a word boundary (see
    // tokenizer/encoder.h). Throws Error naming the file.
    static std::shared_ptr<const SentencePieceTokenizer> load(const std::string& model_path);

    TokenizerKind kind() const override { return TokenizerKind::sentencepiece; }
    int vocab_size() const override { return static_cast<int>(surfaces_.size()); }
    int32_t eot_id() const override { return eot_id_; }
    int32_t unk_id() const override { return unk_id_; }
    std::string_view surface(int32_t id) const override { return surfaces_.at(static_cast<size_t>(id)); }
    std::unique_ptr<TextEncoder> make_encoder() const override;
    const std::string& sha256() const override { return sha256_; }
    const std::vector<std::string>& files() const override { return files_; }

    int32_t byte_id(unsigned char byte) const { return byte_ids_[byte]; }  // the byte-fallback token <0xXX>
    // SentencePiece's encoding of text that must be valid UTF-8 and contain no word boundary
    // inside (one unit of tokenizer/encoder.h); appends to `ids`.
    void encode_unit(std::string_view unit, std::vector<int32_t>& ids) const;

private:
    SentencePieceTokenizer() = default;
    void find_special_tokens();
    void build_surfaces();
    void check_lossless() const;

    sentencepiece::SentencePieceProcessor processor_;
    std::vector<std::string> surfaces_;  // (vocab_size) the text each id decodes to
    std::array<int32_t, 256> byte_ids_{};
    int32_t eot_id_ = -1;
    int32_t unk_id_ = -1;
    std::string sha256_;
    std::vector<std::string> files_;
};

// The SentencePiece model behind `tokenizer`; throws Error when it is of another kind.
std::shared_ptr<const SentencePieceTokenizer> sentencepiece_model(const Tokenizer& tokenizer);

}  // namespace mixgpt
