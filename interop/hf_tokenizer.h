// The tokenizer files of a Hugging Face folder, and which tokenizers import accepts.
//
// A GPT-2 tokenizer is exported as GPT2TokenizerFast's files (interop/hf_tokenizer_gpt2.h).
// A SentencePiece one: export writes mixgpt's SentencePiece model unchanged as tokenizer.model, with a
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

// Writes the tokenizer's files into `directory`: for SentencePiece tokenizer.model (a copy of the
// tokenizer's file), tokenizer_config.json and special_tokens_map.json; for GPT-2 those of
// interop/hf_tokenizer_gpt2.h.
void write_hf_tokenizer(const Tokenizer& tokenizer, int model_max_length, const std::string& directory);

// The folder's tokenizer, loaded and validated: a SentencePiece tokenizer.model (byte fallback,
// end of text, lossless normalization), else GPT-2's vocab.json + merges.txt (byte-level BPE with
// <|endoftext|>). Throws Error naming the folder when it has neither, saying which tokenizer it
// has instead (a tokenizer.json only).
Tokenizer load_hf_tokenizer(const std::string& directory);

// Copies the tokenizer's files into `directory` under their own names (a SentencePiece model as
// tokenizer.model); returns the main file's name there.
std::string copy_tokenizer_files(const Tokenizer& tokenizer, const std::string& directory);

// One sentence for the model card: which tokenizer the folder ships and how transformers loads it.
std::string hf_tokenizer_description(const Tokenizer& tokenizer);

}  // namespace mixgpt::interop
