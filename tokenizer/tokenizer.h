// A lossless tokenizer of one of two kinds, behind one handle:
//
//   sentencepiece  mixgpt's own SentencePiece models (tokenizer/sentencepiece_tokenizer.h),
//                  trained by `prepare`: one file, tokenizer.model
//   gpt2           GPT-2's byte-level BPE (tokenizer/gpt2_tokenizer.h), 50,257 tokens: the
//                  files encoder.json + vocab.bpe (OpenAI), vocab.json + merges.txt (Hugging
//                  Face) or one tiktoken rank file (*.tiktoken)
//
// Both give decode(encode(x)) == x for every byte string x, valid UTF-8 or not, and both
// end every document of a dataset with an end-of-text token that text never produces: a
// literal "<|endoftext|>" in a document encodes as ordinary tokens; the token decodes to
// "<|endoftext|>" so that document boundaries stay visible in samples.
//
// Identity (what datasets and checkpoints record, and what must match between them):
// the kind, the files, and sha256(): for SentencePiece the SHA-256 of the model file, for
// GPT-2 the SHA-256 of its vocabulary and merges in a canonical form, so that the same
// tokenizer read from any of its file formats has one identity.
//
// A Tokenizer is a cheap, shareable handle; its methods are const and thread-safe.
// TextEncoder, its fast bulk encoder with a cache, is for one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mixgpt {

enum class TokenizerKind { sentencepiece, gpt2 };
const char* tokenizer_kind_name(TokenizerKind kind);          // "sentencepiece", "gpt2"
TokenizerKind parse_tokenizer_kind(const std::string& name);  // throws Error for another name

// Bulk encoding for one thread (not thread-safe; make one per thread).
class TextEncoder {
public:
    virtual ~TextEncoder() = default;
    // Appends the tokens of `text` to `ids`; returns how many bytes were not valid UTF-8
    // (kept as byte tokens, never replaced).
    virtual size_t encode(std::string_view text, std::vector<int32_t>& ids) = 0;
};

// What a kind of tokenizer implements.
class TokenizerModel {
public:
    virtual ~TokenizerModel() = default;
    virtual TokenizerKind kind() const = 0;
    virtual int vocab_size() const = 0;
    virtual int32_t eot_id() const = 0;
    virtual int32_t unk_id() const = 0;                      // -1 when the kind has none
    virtual std::string_view surface(int32_t id) const = 0;  // the bytes one token decodes to
    virtual std::unique_ptr<TextEncoder> make_encoder() const = 0;
    virtual const std::string& sha256() const = 0;
    virtual const std::vector<std::string>& files() const = 0;  // paths; the first is the main one
};

class Tokenizer {
public:
    // Loads and validates a tokenizer; the kind follows from the path:
    //   *.tiktoken                          a GPT-2 tiktoken rank file
    //   encoder.json, vocab.bpe             GPT-2's pair (the other file lies beside it)
    //   vocab.json, merges.txt              Hugging Face's pair (idem)
    //   a directory                         the GPT-2 files in it (one of the above)
    //   any other file                      a SentencePiece model
    // Throws Error naming the file and what is wrong.
    static Tokenizer load(const std::string& path);
    // Loads `path` as a tokenizer of `kind` (errors then say what that kind needs).
    static Tokenizer load(const std::string& path, TokenizerKind kind);

    explicit Tokenizer(std::shared_ptr<const TokenizerModel> model) : model_(std::move(model)) {}

    std::vector<int32_t> encode(std::string_view text) const;  // through a new TextEncoder
    std::string decode(const std::vector<int32_t>& ids) const;
    std::string decode(const int32_t* ids, size_t count) const;  // throws Error on an id out of range
    std::unique_ptr<TextEncoder> make_encoder() const { return model_->make_encoder(); }

    TokenizerKind kind() const { return model_->kind(); }
    int vocab_size() const { return model_->vocab_size(); }
    int32_t eot_id() const { return model_->eot_id(); }  // end-of-text token separating documents
    int32_t unk_id() const { return model_->unk_id(); }
    std::string_view surface(int32_t id) const { return model_->surface(id); }
    const std::string& sha256() const { return model_->sha256(); }
    const std::vector<std::string>& files() const { return model_->files(); }
    const std::string& path() const { return model_->files().front(); }
    const std::shared_ptr<const TokenizerModel>& model() const { return model_; }

private:
    std::shared_ptr<const TokenizerModel> model_;
};

}  // namespace mixgpt
