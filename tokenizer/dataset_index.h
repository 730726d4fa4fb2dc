// A dataset folder (format mixgpt-token-shards, version 1): HDF5 shards in the
// single-file format of tokenizer/dataset.h, the tokenizer's files, and
// index.json, which lists them:
//
//   {"format": "mixgpt-token-shards", "format_version": 1,
//    "tokenizer": {"kind": "sentencepiece", "files": ["tokenizer.model"], "sha256": "<hex>"},
//                 (GPT-2: {"kind": "gpt2", "files": ["encoder.json", "vocab.bpe"], ...})
//    "vocab_size": V, "eot_id": E, "unk_id": U (-1: none), "seed": S, "val_fraction": F,
//    "shard_tokens": N,
//    "shards": [{"file": "shard-000000.h5", "bytes": <file size>, "sha256": "<hex of the file>",
//                "first_document": D, "train": {"tokens": .., "bytes": .., "documents": ..},
//                "val": {...}, "invalid_utf8_bytes": .., "skipped_lines": ..}, ...],
//    "commands": ["mixgpt prepare ...", "mixgpt prepare --append ..."],
//    "inputs": [{"path": "corpus/a.txt", "bytes": .., "sha256": "<hex>"}, ...]}
//                (indexes written before inputs were recorded lack it: none known)
//
// Shard k holds the corpus documents [first_document, first_document + its
// documents), each in its split; its tokens never continue into the next
// shard. index.json is written (atomically) only when a prepare or an append
// has finished, so the folder is a complete dataset exactly when it has one.
// The tokenizer identity is a kind, file names and one SHA-256, so that any
// tokenizer kind fits; two datasets share a tokenizer when kind and SHA-256 agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/dataset.h"

namespace mixgpt {

inline constexpr const char* kIndexFileName = "index.json";
inline constexpr const char* kIndexFormat = "mixgpt-token-shards";
inline constexpr int64_t kIndexFormatVersion = 1;

struct ShardRecord {
    std::string file;  // name inside the folder
    uint64_t bytes = 0;
    std::string sha256;
    int64_t first_document = 0;
    SplitInfo train, val;
    int64_t invalid_utf8_bytes = 0;
    int64_t skipped_lines = 0;

    int64_t documents() const { return train.documents + val.documents; }
};

// An input a dataset was made of: its path when read, its size and the SHA-256 of its bytes
// ("" for standard input, which cannot be read twice).
struct InputRecord {
    std::string path;
    uint64_t bytes = 0;
    std::string sha256;
};

struct DatasetIndex {
    TokenizerIdentity tokenizer;
    int vocab_size = 0;
    int32_t eot_id = 0;
    int32_t unk_id = 0;
    uint64_t seed = 0;
    double val_fraction = 0;
    int64_t shard_tokens = 0;
    std::vector<ShardRecord> shards;
    std::vector<std::string> commands;
    std::vector<InputRecord> inputs;  // of every prepare and append, in order

    int64_t documents() const;  // over all shards
};

std::string shard_file_name(int64_t number);  // "shard-000042.h5"

std::string index_json_text(const DatasetIndex& index);
// Writes `index` to `path` atomically (core/atomic_file.h).
void write_index(const std::string& path, const DatasetIndex& index);
// Reads and validates an index; throws Error naming the file and the field.
DatasetIndex read_index(const std::string& path);
// The same from JSON text; `path` names it in errors.
DatasetIndex parse_index(const std::string& text, const std::string& path);

// The dataset of a folder's index: totals per split, the shards' paths, and
// each shard file checked to exist with its recorded size. Throws Error.
DatasetInfo dataset_info_of_index(const std::string& folder, const DatasetIndex& index);

// Hashes the shard at `path` and throws Error naming it when its SHA-256 is not `expected`
// (index.json's record). A shard is checked so when its tokens are first read
// (tokenizer/token_store.h), and all of a dataset's at open with --verify-data.
void check_shard_checksum(const std::string& path, const std::string& expected);

}  // namespace mixgpt
