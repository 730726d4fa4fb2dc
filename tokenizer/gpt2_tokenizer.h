// GPT-2's byte-level BPE tokenizer (kind "gpt2" of tokenizer/tokenizer.h), read from its files
// (tokenizer/gpt2_files.h). Encoding = GPT-2's pre-tokenisation (gpt2_pretokenizer.h), then
// byte-pair merging of each piece (gpt2_bpe.h) through a per-thread cache of pieces; the ids
// are those of OpenAI's encoder (tiktoken's encode_ordinary): text never produces
// <|endoftext|>. Decoding concatenates the tokens' bytes, so it is lossless for any byte string.
//
// sha256() is the SHA-256 of a canonical text (canonical_gpt2_text below) of the vocabulary and
// the merges, the same from encoder.json + vocab.bpe, vocab.json + merges.txt or a .tiktoken file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/gpt2_bpe.h"
#include "tokenizer/gpt2_files.h"
#include "tokenizer/tokenizer.h"

namespace mixgpt {

class Gpt2Tokenizer final : public TokenizerModel, public std::enable_shared_from_this<Gpt2Tokenizer> {
public:
    // `path`: a file or directory as find_gpt2_files takes. Throws Error naming the file.
    static std::shared_ptr<const Gpt2Tokenizer> load(const std::string& path);

    TokenizerKind kind() const override { return TokenizerKind::gpt2; }
    int vocab_size() const override { return static_cast<int>(vocabulary_.tokens.size()); }
    int32_t eot_id() const override { return vocabulary_.eot_id; }
    int32_t unk_id() const override { return -1; }
    std::string_view surface(int32_t id) const override {
        return vocabulary_.tokens.at(static_cast<size_t>(id));
    }
    std::unique_ptr<TextEncoder> make_encoder() const override;
    const std::string& sha256() const override { return sha256_; }
    const std::vector<std::string>& files() const override { return files_; }

    const Gpt2Vocabulary& vocabulary() const { return vocabulary_; }
    const Gpt2Bpe& bpe() const { return bpe_; }

private:
    Gpt2Tokenizer(std::vector<std::string> files, Gpt2Vocabulary vocabulary);

    std::vector<std::string> files_;
    Gpt2Vocabulary vocabulary_;
    Gpt2Bpe bpe_;
    std::string sha256_;
};

// "mixgpt gpt2 bpe 1\n", then "tokens N\n" and each token's bytes as lowercase hex, one per
// line in id order, then "merges M\n" and "LEFT RIGHT\n" ids per merge in rank order, then
// "eot ID\n".
std::string canonical_gpt2_text(const Gpt2Vocabulary& vocabulary);

// The GPT-2 model behind `tokenizer`; throws Error when it is of another kind.
std::shared_ptr<const Gpt2Tokenizer> gpt2_model(const Tokenizer& tokenizer);

}  // namespace mixgpt
