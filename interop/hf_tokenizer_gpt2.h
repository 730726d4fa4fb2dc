// The files a Hugging Face GPT2TokenizerFast (and GPT2Tokenizer) loads, for a GPT-2 tokenizer:
//
//   vocab.json               token (in GPT-2's byte alphabet) -> id, in id order
//   merges.txt               "#version: 0.2", then one "left right" merge per line in rank order
//   tokenizer.json           the `tokenizers` form of the same: BPE model with that vocabulary and
//                            those merges, ByteLevel pre-tokenizer (GPT-2's regex, no prefix space),
//                            ByteLevel post-processor and decoder, <|endoftext|> as a special
//                            added token; the layout of openai-community/gpt2's tokenizer.json
//   tokenizer_config.json    GPT2Tokenizer, no BOS/EOS added, no prefix space, <|endoftext|> as
//                            bos/eos/unk, clean_up_tokenization_spaces false (decoding stays lossless)
//   special_tokens_map.json  bos/eos/unk <|endoftext|>
//
// vocab.json and merges.txt are written from the loaded tokenizer, not copied, so a model
// prepared from a .tiktoken file exports the same files as one from encoder.json + vocab.bpe.
#pragma once

#include <string>

#include "tokenizer/gpt2_tokenizer.h"

namespace mixgpt::interop {

void write_hf_gpt2_tokenizer(const Gpt2Tokenizer& tokenizer, int model_max_length,
                             const std::string& directory);

}  // namespace mixgpt::interop
