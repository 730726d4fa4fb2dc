// A folder written under a temporary name and renamed into place when complete, so that a failed
// export or import leaves nothing that looks finished.
//
//   <final>/                      locked (core/directory_lock.h) before anything is written: a
//                                 second export or import to the same place is refused
//   <final>.tmp-<pid>/            written here, renamed to <final> by commit()
//   <final>.replaced.tmp-<pid>/   holds the folder being replaced (--force), removed after the rename
//
// Both temporaries are this process's (core/owned_temporary.h): a writer killed outright (kill -9,
// a second SIGTERM) leaves them with their marker, and the next StagingDirectory for the same
// <final> removes them once their process is gone; a folder without the marker, or one that is or
// holds an input of the command, is never removed, whatever its name.
//
// What `replace` (--force) may replace is bounded: never a path that is or contains one of the
// command's inputs, never a regular file (a folder is what is written), never a run directory
// that a running `mixgpt train` holds.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/directory_lock.h"
#include "core/stop_signal.h"

namespace mixgpt::interop {

// Throws Error "<output>: stopped by signal N before it was complete; nothing was written" once
// SIGINT or SIGTERM has arrived: export and import call it between their steps, so that a signal
// ends them with their temporaries removed.
void stop_if_signalled(const StopSignalGuard& signals, const std::string& output);

// The checks of StagingDirectory's constructor alone (nothing is created): a command with two
// outputs checks the second before it writes the first.
void require_replaceable(const std::string& final_path, bool replace, const std::vector<std::string>& inputs,
                         const std::string& option);

class StagingDirectory {
public:
    // Refuses (Error) when `final_path` exists and is not an empty directory, unless `replace`; and
    // always when it is a file, in use, or one of `inputs` (files or folders the command reads) lies
    // at or inside it. `option` names the output's option in messages ("-o", "--reference-out"),
    // `tool` the command in the temporaries' marker ("export", "import").
    StagingDirectory(std::string final_path, bool replace, const std::vector<std::string>& inputs,
                     const std::string& option, const std::string& tool);
    StagingDirectory(const StagingDirectory&) = delete;
    StagingDirectory& operator=(const StagingDirectory&) = delete;
    ~StagingDirectory();  // removes the temporary folder unless committed, and <final> if it made it

    const std::string& path() const { return temporary_path_; }  // write here
    void commit();  // replaces final_path with the temporary folder

private:
    std::string final_path_;
    std::string temporary_path_;
    std::string tool_;
    bool created_final_ = false;  // <final> did not exist: the lock made it
    std::optional<DirectoryLock> lock_;
    bool committed_ = false;
};

}  // namespace mixgpt::interop
