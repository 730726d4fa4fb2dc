// The output folder of `mixgpt prepare` (tokenizer/prepare.h): what it holds
// when a run starts, where the run writes, and what is undone when a run
// fails before its first shard. The caller holds the folder's lock
// (core/directory_lock.h) throughout: the folder exists.
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
    resume,   // continue progress.json (in the folder, or in the work folder of a killed --force)
    complete  // --resume of a finished dataset: nothing to do
};

struct PrepareFolder {
    PrepareStart start = PrepareStart::fresh;
    std::string directory;  // the dataset's folder
    std::string work;       // where this run writes: directory, or "<directory>.tmp-<pid>" for replace
    bool replaces = false;  // the work folder takes the directory's place when complete
    std::optional<DatasetIndex> base;  // append: the dataset's index (a single-file dataset as one shard)
    std::optional<PrepareJournal> journal;  // resume
    std::vector<std::string> removed;       // stale temporaries removed at start-up

    std::string index_path() const;
    std::string journal_path() const;
};

// Looks at the folder; with --resume, takes over the work folder of a --force run that was killed
// (a sibling "<name>.tmp-<pid>" of a process that is gone, holding progress.json) and continues it;
// removes the temporaries of prepares that are gone (core/owned_temporary.h:
// files "*.tmp-<pid>-<start>" inside it, marked sibling folders "<name>.tmp-<pid>" and
// "<name>.old-<pid>"; never one of `inputs`), and decides how the run starts; throws Error when
// the options do not fit what is there (a dataset without --force/--append, an unfinished prepare
// without --resume...). Creates the sibling work folder for replace.
PrepareFolder open_prepare_folder(const PrepareOptions& options, const std::string& directory,
                                  const std::vector<std::string>& inputs);

// After a complete run: for replace (or its resumption), the new folder takes the old one's place (the old one goes
// into the marked folder "<name>.old-<pid>" first, removed last).
void finish_prepare_folder(const PrepareFolder& folder);

// After a failed run that committed no shard: removes what it wrote (the
// journal, the tokenizer files it wrote, named in the work folder, the work
// folder of replace).
void undo_prepare_folder(const PrepareFolder& folder,
                         const std::vector<std::string>& tokenizer_files_written);

}  // namespace mixgpt
