// The token dataset format: one HDF5 file, readable by any HDF5 tool.
//
//   /                  attributes: format = "mixgpt-tokens", format_version = 1,
//                      vocab_size, eot_id, unk_id (-1: none), tokenizer_sha256,
//                      tokenizer_kind ("sentencepiece" or "gpt2", tokenizer/tokenizer.h),
//                      tokenizer_files (the names of its files beside the dataset, one per
//                      line, main file first), tokenizer_file (the main one's name),
//                      command, seed, val_fraction, invalid_utf8_bytes, skipped_lines
//   /train, /val       groups with attributes tokens, bytes, documents
//   /<split>/tokens       (N,)   uint16 when vocab_size <= 65536, else uint32;
//                                chunked, uncompressed; each document's tokens
//                                are followed by eot_id
//   /<split>/doc_offsets  (D+1,) int64; document d is tokens[off[d], off[d+1]),
//                                its end-of-text token included
//
// `bytes` counts the UTF-8 text the split's tokens stand for (end-of-text
// tokens stand for none), for bits per byte.
//
// A dataset is such a file, or a folder of them with an index
// (tokenizer/dataset_index.h); read_dataset_info reads either, and a file is a
// dataset of one shard.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/h5.h"

namespace mixgpt {

inline constexpr const char* kDatasetFormat = "mixgpt-tokens";
inline constexpr int64_t kDatasetFormatVersion = 1;
inline constexpr int64_t kTokenChunkElements = int64_t{1} << 18;  // HDF5 chunk of /<split>/tokens

struct SplitInfo {
    int64_t tokens = 0;
    int64_t bytes = 0;
    int64_t documents = 0;
};

// Which tokenizer made a dataset: its kind (tokenizer_kind_name of tokenizer/tokenizer.h), the
// names of its files beside the dataset (main file first) and the SHA-256 the tokenizer reports
// (Tokenizer::sha256()). A folder's index.json and every HDF5 file record it.
struct TokenizerIdentity {
    std::string kind = "sentencepiece";
    std::vector<std::string> files;
    std::string sha256;

    bool same_as(const TokenizerIdentity& other) const {
        return kind == other.kind && sha256 == other.sha256;
    }
    std::string describe() const;  // "sentencepiece tokenizer.model (sha256 0123456789ab...)"
};

// One HDF5 file of a dataset.
struct ShardInfo {
    std::string path;
    uint64_t bytes = 0;  // file size
    std::string sha256;  // of the file, as index.json records it ("" for a single-file dataset)
    SplitInfo train, val;
    const SplitInfo& split(const std::string& name) const { return name == "train" ? train : val; }
};

struct DatasetInfo {
    std::string path;                 // the folder with index.json, or the .h5 file
    std::string tokenizer_directory;  // where the tokenizer's files lie: the folder, or the file's
    TokenizerIdentity tokenizer;
    int vocab_size = 0;
    int32_t eot_id = 0;
    SplitInfo train, val;
    int32_t unk_id = 0;
    std::string command;  // the command that made the file
    int64_t invalid_utf8_bytes = 0;
    std::vector<ShardInfo> shards;  // a single file: itself

    const SplitInfo& split(const std::string& name) const;  // "train" or "val"; throws Error otherwise
    std::string tokenizer_path() const;                     // its main file (Tokenizer::load takes it)
    std::vector<std::string> tokenizer_paths() const;       // all its files, main file first
};

// A folder with index.json: its index (tokenizer/dataset_index.h). A file:
// opens it and checks its format, version, attributes and that every dataset
// has the length its attributes give. Throws Error naming the file.
DatasetInfo read_dataset_info(const std::string& dataset_path);
// The same, for the commands that train on or score a dataset (train, eval, study): a folder's
// index is also checked against the tokenizer beside it (its files' SHA-256, vocab_size, eot_id,
// unk_id), so that a model is never sized by an index that is not its tokenizer's. Throws Error
// naming index.json and the field.
DatasetInfo read_checked_dataset_info(const std::string& dataset_path);

// The element type of /<split>/tokens for a vocabulary.
h5::Type token_storage_type(int vocab_size);

}  // namespace mixgpt
