// A training run's directory (`train -o DIR`), held by one process (rank 0) for the run's lifetime:
//
//   run.lock      flock'ed while a process writes here (core/directory_lock.h): a second writer
//                 fails in one line naming the holder's pid and host
//   run_id        the lineage this directory's run belongs to: a fresh run draws a new id, a
//                 resumed run keeps its checkpoint's; every checkpoint records it in its header, and
//                 rotation removes only checkpoints of this lineage
//   metrics.jsonl, checkpoints/step_<8 digits>.h5    (train/trainer.h)
//   eval.json          the task evaluation after the last step (--task-eval)
//   replaced-<time>/   a previous run, moved aside by `train --overwrite`
//
// Nothing of another run is ever removed or mixed in: a fresh start into a directory that holds a
// run (checkpoints, metrics.jsonl or run_id) is refused unless --overwrite, which moves that run's
// files into replaced-<time>/ and says so; --resume FILE of another lineage is refused the same way.
// --overwrite moves only those files (and their temporaries), and refuses a directory that holds
// anything else (a project's sources, a dataset), naming one such entry.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/directory_lock.h"

namespace mixgpt {

// A run is written apart from the datasets it reads: throws Error naming the option and the dataset
// when `output_dir` or `tensorboard_dir` (unless "": --tensorboard off) is, or lies in, one of the
// `datasets` folders (checkpoints or event files would land among the shards, and --overwrite
// would have the dataset's files to reckon with).
void require_run_apart_from(const std::string& output_dir, const std::string& tensorboard_dir,
                            const std::vector<std::string>& datasets);

class RunDirectory {
public:
    // Creates and locks `path`; throws Error when another process holds it.
    explicit RunDirectory(std::string path);
    // Unlocks; removes the directory again when this object created it and nothing was written.
    ~RunDirectory();
    RunDirectory(const RunDirectory&) = delete;
    RunDirectory& operator=(const RunDirectory&) = delete;

    const std::string& path() const { return path_; }
    std::string checkpoints() const;
    // "" when the directory holds no run; else what it holds ("checkpoints/ (3 files), metrics.jsonl").
    std::string run_files() const;
    // The lineage recorded in run_id; "" when there is none.
    std::string run_id() const;
    void write_run_id(const std::string& run_id) const;
    // Moves the run's files (the list above, but run.lock and earlier replaced-* folders) into a
    // new replaced-<time>/ folder inside the directory and returns that folder's path; throws
    // Error, having moved nothing, when the directory holds an entry that is not part of a run.
    std::string move_run_aside() const;

private:
    std::string path_;
    bool created_ = false;
    std::optional<DirectoryLock> lock_;
};

}  // namespace mixgpt
