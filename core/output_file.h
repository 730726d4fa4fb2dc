// A file a command writes whole: an output the user names (eval --per-example, bench --json-out, a
// study's reports) or one of its own (index.json, run_id). What the path names decides how:
//
//   nothing, or a regular file   written beside it (core/atomic_file.h) and renamed over it once
//                                complete; through a symbolic link, the file the link names is
//                                replaced, or made when it does not exist yet, and the link stays
//   this process's standard      (/dev/stdout, /proc/self/fd/2, or the file they are redirected to)
//   output or error              written to that descriptor, after what the process printed there
//   anything else                (/dev/full, /dev/null, a pipe, a terminal) written through
//
// Only a regular file is ever replaced. An output that is one of the command's input files (the
// same file, by device and inode) is refused before anything is written. Every failure is an
// Error naming the path and the reason ("No space left on device").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/atomic_file.h"

namespace mixgpt {

class OutputFile {
public:
    // Opens where the content will go, so that a path that cannot be written fails before any
    // work; throws Error "<path>: is an input of this command; choose another <option>" when it
    // is one of `inputs`.
    explicit OutputFile(std::string path, const std::vector<std::string>& inputs = {},
                        const std::string& option = "");
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;
    ~OutputFile();  // without write(): a temporary is removed, a replaced file left as it was

    // Writes `content` and completes the file (fsync and rename for a regular file); once.
    void write(const std::string& content);

private:
    std::string path_;
    std::optional<AtomicOutput> replacement_;  // regular files
    int descriptor_ = -1;
    bool standard_stream_ = false;  // descriptor_ is 1 or 2, not ours to close
};

// OutputFile(path).write(content).
void write_whole_file(const std::string& path, const std::string& content);

}  // namespace mixgpt
