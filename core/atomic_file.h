// Write-then-rename: output appears under its final name only when complete.
//
//   AtomicOutput out("data/kjv/dataset.h5");   // reserves "dataset.h5.tmp-<pid>"
//   write everything to out.temporary_path();
//   out.commit();                              // fsync + rename
//
// If commit() is never reached (exception, early return) the temporary file is
// removed, so an interrupted run never leaves a file that looks complete. A file the user names
// is written through core/output_file.h, which replaces only regular files.
#pragma once

#include <string>
#include <vector>

namespace mixgpt {

class AtomicOutput {
public:
    explicit AtomicOutput(std::string final_path);
    AtomicOutput(const AtomicOutput&) = delete;
    AtomicOutput& operator=(const AtomicOutput&) = delete;
    ~AtomicOutput();

    const std::string& temporary_path() const { return temporary_path_; }
    const std::string& final_path() const { return final_path_; }
    void commit();  // fsyncs the temporary file, renames it, fsyncs the directory

private:
    std::string final_path_;
    std::string temporary_path_;
    bool committed_ = false;
};

// Removes the temporaries ("<name>.tmp-<pid>") in `directory` whose writer is gone: no process
// <pid> exists, and it is not this one. Returns the paths removed. A writer on another machine
// sharing the directory is not seen: do not share a run directory between machines.
std::vector<std::string> remove_stale_temporaries(const std::string& directory);

bool file_exists(const std::string& path);
// Creates `directory` and its parents; throws Error when that fails.
void make_directories(const std::string& directory);

}  // namespace mixgpt
