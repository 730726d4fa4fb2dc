// The tokenizer files of a Hugging Face folder, and which tokenizers import accepts.
//
// Export writes mixgpt's SentencePiece model unchanged as tokenizer.model, with a
// tokenizer_config.json for transformers' LlamaTokenizer in legacy mode (SentencePiece encodes
// the text as it is, with the model's own normalizer: identity, no dummy prefix), no BOS or EOS
// added, no prefix space, and <|endoftext|> as bos/eos. No tokenizer.json is written: a fast
// tokenizer is converted from tokenizer.model by transformers on load (see interop/README.md
// for why, and what remains to confirm on a host with transformers).
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace mixgpt::interop {

inline constexpr const char* kTokenizerModelFile = "tokenizer.model";

// Writes tokenizer.model (a copy of the tokenizer's file), tokenizer_config.json and
// special_tokens_map.json into `directory`.
void write_hf_tokenizer(const Tokenizer& tokenizer, int model_max_length, const std::string& directory);

// The folder's SentencePiece tokenizer.model, loaded and validated (byte fallback, end of text,
// lossless normalization). Throws Error naming the folder when it has none, saying which
// tokenizer it has instead (GPT-2 byte-level BPE vocab.json/merges.txt, a tokenizer.json only).
Tokenizer load_hf_tokenizer(const std::string& directory);

}  // namespace mixgpt::interop
