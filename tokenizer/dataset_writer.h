// Streams documents into a token dataset (format in tokenizer/dataset.h).
// Memory stays bounded: tokens are buffered up to one HDF5 chunk per split
// and written chunk by chunk. The file is complete only after finish(); write
// it under a temporary name (core/atomic_file.h) and rename it afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/h5.h"
#include "tokenizer/dataset.h"

namespace mixgpt {

enum class Split { train, val };
const char* split_name(Split split);

struct DatasetMetadata {
    int vocab_size = 0;
    int32_t eot_id = 0;
    int32_t unk_id = 0;
    TokenizerIdentity tokenizer = {"sentencepiece", {"tokenizer.model"}, ""};
    std::string command;
    uint64_t seed = 0;
    double val_fraction = 0.0;
};

class DatasetWriter {
public:
    DatasetWriter(const std::string& path, DatasetMetadata metadata);  // creates (truncates) the file

    // A document is begun, given its tokens in one or more pieces, and ended
    // with the number of text bytes it holds; the end-of-text token is added here.
    void begin_document(Split split);
    void append_tokens(const int32_t* tokens, size_t count);  // throws Error on an id outside the vocabulary
    void end_document(int64_t bytes);
    void add_document(Split split, const std::vector<int32_t>& tokens, int64_t bytes);

    // Writes what is buffered and the attributes, then closes the file (throws when it cannot).
    void finish(int64_t invalid_utf8_bytes, int64_t skipped_lines);

    const SplitInfo& info(Split split) const { return splits_[static_cast<int>(split)].info; }

private:
    struct SplitState {
        std::string group;  // "/train" or "/val"
        SplitInfo info;
        std::vector<uint32_t> pending_tokens;
        std::vector<int64_t> pending_offsets;
    };
    void flush_tokens(SplitState& state, bool everything);
    void flush_offsets(SplitState& state);

    h5::File file_;
    DatasetMetadata metadata_;
    h5::Type token_type_;
    SplitState splits_[2];
    SplitState* current_ = nullptr;  // the split of the open document
};

}  // namespace mixgpt
