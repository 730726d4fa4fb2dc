// `mixgpt prepare`: corpus -> tokenizer + a dataset folder of HDF5 shards.
//
// Checks early that both splits will hold documents (reading the corpus only
// up to its first validation document), trains a SentencePiece tokenizer on a
// bounded sample of the corpus or reuses a tokenizer (a SentencePiece model or
// GPT-2's files, tokenizer/tokenizer.h), encodes every document on all cores
// while streaming (memory stays bounded whatever the corpus size), assigns
// each document to the train or validation split
// (tokenizer/document_split.h) and writes the shards, the tokenizer's files
// (tokenizer.model, or GPT-2's files under their own names) and index.json
// into the output folder (format: tokenizer/dataset_index.h).
//
// Interruptions: every shard is complete or absent (temporary names, renamed
// when complete); progress.json records the complete shards and where the
// corpus stands after them, so `resume` continues from the last complete
// shard and ends with exactly the bytes an uninterrupted run writes. A run that
// stops before its first shard (error, signal) removes what it wrote.
// Temporaries of dead processes are removed at start-up. `force` builds the
// new dataset beside the old one and replaces it only when complete; `append`
// adds the inputs' documents as new shards, with the dataset's tokenizer
// (of either kind), seed and split fraction, and refuses a --seed,
// --val-fraction or --vocab-size given otherwise.
//
// Inputs are identified by content (path, size and the SHA-256 of the file,
// tokenizer/dataset_index.h's InputRecord): the index lists every input a
// dataset was made of, so an append refuses an input the dataset holds
// already, under any name; progress.json records them too, so a resume
// refuses an input edited since, even in place at the same size.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/corpus.h"
#include "tokenizer/dataset.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_trainer.h"

namespace mixgpt {

inline constexpr const char* kDatasetFileName = "dataset.h5";  // a single-file dataset (format version 1)
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
    bool force = false;                    // replace an existing dataset (once the new one is complete)
    int threads = 0;                       // encoding threads; 0: all cores
    std::string command;                   // recorded in the dataset
    int64_t shard_tokens = 100'000'000;    // a shard is closed at the first document end at or past this
    bool append = false;                   // add the inputs to the dataset in output_directory
    // Those of --val-fraction, --seed and --vocab-size that were given: append refuses one that
    // is not the dataset's.
    std::vector<std::string> given_dataset_options;
    bool resume = false;                   // continue an interrupted prepare (or append)
    std::function<bool()> stop_requested;  // polled between batches (SIGTERM): stop, keep complete shards
};

struct PrepareResult {
    std::string dataset_path;              // the folder
    std::string tokenizer_path;            // its main file, in the folder
    SplitInfo train, val;                  // of the whole dataset
    int64_t shards = 0;                    // of the whole dataset
    int64_t shards_written = 0;            // by this run
    int64_t resumed_at_document = -1;      // -1: not resumed
    std::vector<std::string> input_lines;  // which inputs were taken and left
    int64_t invalid_utf8_bytes = 0;
    int64_t skipped_lines = 0;
    int threads = 0;
    double tokenizer_seconds = 0;  // sampling and training (or loading)
    double encode_seconds = 0;     // reading, encoding and writing
    double input_megabytes = 0;    // text encoded
};

PrepareResult run_prepare(const PrepareOptions& options);

}  // namespace mixgpt
