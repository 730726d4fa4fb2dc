// `mixgpt prepare`: corpus -> tokenizer + HDF5 token dataset.
//
// Trains a SentencePiece tokenizer on a bounded sample of the corpus, or reuses a tokenizer
// (a SentencePiece model or GPT-2's files, tokenizer/tokenizer.h),
// encodes every document on all cores while streaming (memory stays bounded
// whatever the corpus size), assigns each document to the train or
// validation split (tokenizer/document_split.h) and writes
// <output>/dataset.h5 (format: tokenizer/dataset.h) with the tokenizer's files beside it
// (tokenizer.model, or GPT-2's files under their own names). All are written under temporary
// names and renamed when complete; existing outputs are kept unless `force`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/corpus.h"
#include "tokenizer/dataset.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_trainer.h"

namespace mixgpt {

inline constexpr const char* kDatasetFileName = "dataset.h5";
inline constexpr const char* kTokenizerFileName = "tokenizer.model";

struct PrepareOptions {
    CorpusOptions corpus;          // the inputs and how to read them
    std::string builtin_corpus;    // "kjv": the built-in corpus instead of inputs
    std::string output_directory;  // empty: data/<builtin_corpus>
    std::string
        tokenizer_path;  // reuse this tokenizer (any path Tokenizer::load takes) instead of training one
    std::optional<TokenizerKind> tokenizer_kind;  // set: load the reused tokenizer as this kind
    TokenizerTrainingOptions tokenizer;
    int64_t tokenizer_sample_bytes = 100'000'000;
    double val_fraction = 0.05;
    uint64_t seed = 0;
    bool force = false;   // overwrite existing outputs
    int threads = 0;      // encoding threads; 0: all cores
    std::string command;  // recorded in the dataset
};

struct PrepareResult {
    std::string dataset_path;
    std::string tokenizer_path;                // its main file
    std::vector<std::string> tokenizer_files;  // all its files, beside the dataset
    SplitInfo train, val;
    int64_t invalid_utf8_bytes = 0;
    int64_t skipped_lines = 0;
    int threads = 0;
    double tokenizer_seconds = 0;  // sampling and training (or loading)
    double encode_seconds = 0;     // reading, encoding and writing
    double input_megabytes = 0;    // text encoded
};

PrepareResult run_prepare(const PrepareOptions& options);

}  // namespace mixgpt
