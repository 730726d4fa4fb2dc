// A SentencePiece tokenizer made lossless: decode(encode(x)) == x for every
// byte string x, valid UTF-8 or not.
//
// Models are trained by tokenizer/tokenizer_trainer.h with byte fallback and
// identity normalization. Encoding passes each valid UTF-8 run to
// SentencePiece and turns every byte of an invalid sequence into its
// byte-fallback token <0xXX>; decoding concatenates each token's surface text
// (byte tokens give their raw byte), so nothing is replaced by U+FFFD.
//
// End of text: the control token <|endoftext|> follows every document in a
// dataset. Being a control token, it is never produced from text (a literal
// "<|endoftext|>" in a document encodes as ordinary pieces); it decodes to
// "<|endoftext|>" so that document boundaries stay visible in samples.
//
// A Tokenizer is a cheap, shareable handle; encode and decode are const and
// safe to call from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mixgpt {

class Tokenizer {
public:
    // Loads and validates a model: it must have byte fallback for all 256
    // bytes, an end-of-text token, lossless normalization and no piece that
    // spans a word boundary (see tokenizer/encoder.h). Throws Error naming the file.
    static Tokenizer load(const std::string& model_path);

    std::vector<int32_t> encode(std::string_view text) const;
    std::string decode(const std::vector<int32_t>& ids) const;
    std::string decode(const int32_t* ids, size_t count) const;  // throws Error on an id out of range

    int vocab_size() const;
    int32_t eot_id() const;  // end-of-text token separating documents
    int32_t unk_id() const;
    int32_t byte_id(unsigned char byte) const;   // the byte-fallback token <0xXX>
    std::string_view surface(int32_t id) const;  // the text one token decodes to
    const std::string& sha256() const;           // SHA-256 of the model file
    const std::string& path() const;

    // SentencePiece's encoding of text that must be valid UTF-8 and contain
    // no word boundary inside (one unit of tokenizer/encoder.h); appends to `ids`.
    void encode_unit(std::string_view unit, std::vector<int32_t>& ids) const;

    struct Model;  // defined in tokenizer.cpp

private:
    explicit Tokenizer(std::shared_ptr<const Model> model) : model_(std::move(model)) {}
    std::shared_ptr<const Model> model_;
};

}  // namespace mixgpt
