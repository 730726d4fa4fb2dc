// progress.json: what an unfinished `prepare` (or `prepare --append`) has
// committed, so that `prepare --resume` continues from its last complete
// shard. Rewritten atomically after each shard; removed when index.json is
// written.
//
//   {"format": "mixgpt-prepare-progress", "format_version": 1,
//    "settings": {...}          what must not change between the run and its resumption:
//                               inputs (paths, sizes and SHA-256), reading options, seed, split,
//                               shard size, tokenizer, and the shards the run started from
//    "position": {"input", "offset", "line", "next_document", "skipped_lines"},
//    "index": {...}}            the dataset index (tokenizer/dataset_index.h) of the shards so far
#pragma once

#include <string>

#include "tokenizer/corpus.h"
#include "tokenizer/dataset_index.h"

namespace mixgpt {

inline constexpr const char* kJournalFileName = "progress.json";

struct PrepareJournal {
    std::string settings;  // canonical JSON text
    CorpusPosition position;
    DatasetIndex index;
};

void write_journal(const std::string& path, const PrepareJournal& journal);
PrepareJournal read_journal(const std::string& path);  // throws Error naming the file

// Throws Error naming the first setting that differs ("inputs", "seed", ...) and both values.
void require_same_settings(const std::string& recorded, const std::string& current,
                           const std::string& journal_path);

}  // namespace mixgpt
