// What a training run's directory holds (train/run_directory.h): the entries a run writes there,
// and the run a checkpoint belongs to. Commands that read a run (eval, export) use it to find the
// run's files and never to replace one of them with an output of theirs.
#pragma once

#include <string>

namespace mixgpt {

// The entries a run writes in its directory, besides run.lock and replaced-*/.
inline constexpr const char* kRunEntries[] = {"checkpoints", "metrics.jsonl", "run_id", "eval.json"};

// The run directory a checkpoint belongs to: `source` when it names a directory (a run), else the
// folder holding the checkpoint's checkpoints/ folder (or the checkpoint's own folder).
std::string run_directory_of(const std::string& source, const std::string& checkpoint_path);

// Throws Error "<path>: is <run>'s <entry>; an output never replaces a run's own files: choose
// another <option>" when `path` exists and is one of the run's entries or lies in one of them.
void require_not_a_run_file(const std::string& path, const std::string& run_directory, const std::string& option);

}  // namespace mixgpt
