// Write-then-rename: output appears under its final name only when complete.
//
//   AtomicOutput out("data/kjv/dataset.h5");   // reserves "dataset.h5.tmp-<pid>-<start>"
//   write everything to out.temporary_path();
//   out.commit();                              // fsync + rename
//
// If commit() is never reached (exception, early return) the temporary file is
// removed, so an interrupted run never leaves a file that looks complete. The temporary's name
// says which process wrote it (core/owned_temporary.h): the sweep after a kill -9,
// remove_stale_owned_files, removes it, and nothing else. A file the user names is written
// through core/output_file.h, which replaces only regular files.
#pragma once

#include <string>

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

bool file_exists(const std::string& path);
// Creates `directory` and its parents; throws Error when that fails.
void make_directories(const std::string& directory);

}  // namespace mixgpt
