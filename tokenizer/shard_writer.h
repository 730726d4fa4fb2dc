// Streams documents into the shards of a dataset folder
// (tokenizer/dataset_index.h). A shard is written under a temporary name
// (core/atomic_file.h) and committed (fsync, SHA-256, rename) once it holds
// at least `shard_tokens` tokens at the end of a document, or at finish().
// Nothing else in a shard depends on the process that wrote it, so the same
// documents give the same bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/atomic_file.h"
#include "tokenizer/corpus.h"
#include "tokenizer/dataset_index.h"
#include "tokenizer/dataset_writer.h"

namespace mixgpt {

struct ShardCommit {
    ShardRecord record;
    CorpusPosition after;  // where the corpus stands after the shard's last document
};

class ShardWriter {
public:
    // Shards are numbered from `first_number`, their documents from `first_document`;
    // `skipped_lines_before`: the corpus's skipped lines before the first document.
    ShardWriter(std::string directory, DatasetMetadata metadata, int64_t shard_tokens, int64_t first_number,
                int64_t first_document, int64_t skipped_lines_before,
                std::function<void(const ShardCommit&)> committed);

    void begin_document(Split split);
    void append_tokens(const int32_t* tokens, size_t count);
    void end_document(int64_t bytes, int64_t invalid_utf8_bytes, const CorpusPosition& after);
    void finish();  // commits the open shard when it holds a document

    const SplitInfo& total(Split split) const { return totals_[static_cast<int>(split)]; }  // this writer's
    int64_t shards_committed() const { return next_number_ - first_number_; }

private:
    void open_shard();
    void commit_shard();

    std::string directory_;
    DatasetMetadata metadata_;
    int64_t shard_tokens_;
    int64_t first_number_, next_number_;
    int64_t next_document_;
    int64_t skipped_lines_before_;
    std::function<void(const ShardCommit&)> committed_;
    SplitInfo totals_[2];
    // The open shard (output_ outlives writer_, which closes the file first).
    std::optional<AtomicOutput> output_;
    std::unique_ptr<DatasetWriter> writer_;
    ShardRecord record_;
    CorpusPosition last_position_;
};

}  // namespace mixgpt
