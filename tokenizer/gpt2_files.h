// GPT-2 tokenizer files: finding and reading them into one in-memory form.
//
//   encoder.json + vocab.bpe   OpenAI's files: a JSON object token -> id, and the merges, one
//                              "left right" pair per line in rank order after a "#version" line.
//                              Tokens are written in GPT-2's byte alphabet: each byte as one
//                              printable character (bytes_to_unicode in GPT-2's encoder.py).
//   vocab.json + merges.txt    the same two files under Hugging Face's names.
//   NAME.tiktoken              tiktoken's rank file: "base64(token bytes) rank" per line. It holds
//                              no special token: <|endoftext|> takes the id after the last rank
//                              (50256 for GPT-2's r50k_base), and the merges are rebuilt from the
//                              ranks (each token is the last merge of BPE on its own bytes with
//                              the tokens ranked before it), as tiktoken's BPE implies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mixgpt {

inline constexpr const char* kGpt2EndOfText = "<|endoftext|>";

struct Gpt2Vocabulary {
    std::vector<std::string> tokens;                  // (vocab_size) the bytes each id stands for
    std::vector<std::pair<int32_t, int32_t>> merges;  // (merges) by rank: the two ids joined
    int32_t eot_id = -1;                              // <|endoftext|>
};

// The files of a GPT-2 tokenizer at `path`: one of the files above, or a directory holding
// them (encoder.json + vocab.bpe first, then vocab.json + merges.txt, then one *.tiktoken).
// The main file (the JSON vocabulary or the rank file) comes first. Throws Error saying what
// is missing.
std::vector<std::string> find_gpt2_files(const std::string& path);
// True when `path` names GPT-2 files rather than a SentencePiece model: a directory, a
// *.tiktoken file, or one of the four names above.
bool is_gpt2_tokenizer_path(const std::string& path);

// Reads and validates the files of find_gpt2_files: every byte has a token, every merge joins
// two tokens into a third and only uses tokens of earlier merges, every other token is made by
// a merge (so a merge file cut short is refused), there is an <|endoftext|> token. Throws Error
// naming the file, line or token.
Gpt2Vocabulary read_gpt2_vocabulary(const std::vector<std::string>& files);

// GPT-2's byte alphabet: `bytes` written as printable characters, as in vocab.json and merges.txt.
std::string byte_alphabet_text(std::string_view bytes);

}  // namespace mixgpt
