// Fixtures of the tokenizer and data tests: a small generated multilingual
// corpus, a tiny tokenizer trained on it once per test process, and synthetic
// token datasets. (Temporary directories: tests/test_support.h.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/dataset_writer.h"
#include "tokenizer/tokenizer.h"

namespace mixgpt::testing {

// `count` documents of generated text: English-like sentences with digits,
// runs of spaces, tabs and punctuation, and some lines in German, French,
// Greek, Russian, Chinese, Japanese, Korean, with emoji and combining marks.
std::vector<std::string> multilingual_documents(int count, uint32_t seed);

// A BPE tokenizer with 500 tokens trained on multilingual_documents(60, 1),
// trained on first use and kept for the whole test process.
const Tokenizer& tiny_tokenizer();
const std::string& tiny_tokenizer_path();

// Reads a whole file.
std::string read_file(const std::string& path);
// Writes `content` gzip-compressed.
void write_gzip(const std::string& path, const std::string& content);
// `content` compressed as a zstd frame, and as an xz stream (through libzstd and liblzma).
std::string zstd_compressed(const std::string& content);
std::string xz_compressed(const std::string& content);

// Tokens of /<split>/tokens and /<split>/doc_offsets of a dataset (a file, or a folder: its shards'
// concatenated, offsets continuing), read with core/h5.
std::vector<int32_t> read_tokens(const std::string& dataset, const std::string& split);
std::vector<int64_t> read_offsets(const std::string& dataset, const std::string& split);

// A dataset whose train and val splits both hold tokens 0, 1, ..., tokens - 1:
// one document whose end-of-text token is tokens - 1. vocab_size > tokens - 1.
void write_counting_dataset(const std::string& path, int64_t tokens, int vocab_size,
                            const std::string& tokenizer_sha256 = "counting");

// A dataset folder (tokenizer/dataset_index.h) whose shard s holds, in both splits, one document:
// tokens f + s*start_step, f + s*start_step + 1, ... (f = first_token), then the end-of-text token
// vocab_size - 1 (shard_tokens[s] tokens in all). Its tokenizer SHA-256 is "counting".
void write_counting_folder(const std::string& folder, const std::vector<int64_t>& shard_tokens,
                           int vocab_size, int32_t start_step, int32_t first_token = 0);

}  // namespace mixgpt::testing
