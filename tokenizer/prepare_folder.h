// The output folder of `mixgpt prepare` (tokenizer/prepare.h): what it holds
// when a run starts, where the run writes, and what is undone when a run
// fails before its first shard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/dataset_index.h"
#include "tokenizer/prepare_journal.h"

namespace mixgpt {

struct PrepareOptions;

enum class PrepareStart {
    fresh,    // a new dataset in the folder
    replace,  // --force over a dataset: built in a sibling folder, swapped in when complete
    append,   // new shards after the dataset's
    resume,   // continue progress.json
    complete  // --resume of a finished dataset: nothing to do
};

struct PrepareFolder {
    PrepareStart start = PrepareStart::fresh;
    std::string directory;             // the dataset's folder
    std::string work;                  // where this run writes: directory, or the sibling folder for replace
    std::optional<DatasetIndex> base;  // append: the dataset's index (a single-file dataset as one shard)
    std::optional<PrepareJournal> journal;  // resume
    bool created_directory = false;
    std::vector<std::string> removed;  // stale temporaries removed at start-up

    std::string index_path() const;
    std::string journal_path() const;
};

// Looks at the folder, removes temporaries of dead processes (files
// "*.tmp-PID" inside it, sibling folders "<name>.tmp-PID" and "<name>.old-PID"),
// and decides how the run starts; throws Error when the options do not fit
// what is there (a dataset without --force/--append, an unfinished prepare
// without --resume...). Creates the folder (and the sibling work folder) when needed.
PrepareFolder open_prepare_folder(const PrepareOptions& options, const std::string& directory);

// After a complete run: for replace, the new folder takes the old one's place.
void finish_prepare_folder(const PrepareFolder& folder);

// After a failed run that committed no shard: removes what it wrote (the
// journal, the tokenizer files it wrote, named in the work folder, the work
// folder if this run created it).
void undo_prepare_folder(const PrepareFolder& folder,
                         const std::vector<std::string>& tokenizer_files_written);

}  // namespace mixgpt
