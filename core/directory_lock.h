// An advisory lock on a directory, so that two processes never write the same run directory:
// flock(LOCK_EX) on `<directory>/run.lock`, held while the object lives. The kernel releases it
// when the process ends in any way (kill -9 included), so a stale lock never blocks anyone. The
// file holds "pid <pid> host <host>" of the holder, for the message of the process refused.
//
// The holder removes the file when it lets go (unless the directory was renamed away meanwhile,
// and the path names another file); a process that locked a file that was removed meanwhile (the
// path no longer names its inode) tries again, so two holders are impossible. Every writer of a
// folder takes it before it writes anything there: train (its run directory), prepare (its
// dataset folder), study (its study folder), export and import (their output folder).
// Advisory: only mixgpt's own writers take it. flock on NFS works between clients on Linux 2.6.12+.
#pragma once

#include <string>

namespace mixgpt {

class DirectoryLock {
public:
    // Creates `directory` (and its parents) if needed, then takes the lock; throws Error
    // "<directory>: in use by process <pid> on <host> (lock <file>); ..." when another holds it.
    explicit DirectoryLock(const std::string& directory);
    ~DirectoryLock();
    DirectoryLock(const DirectoryLock&) = delete;
    DirectoryLock& operator=(const DirectoryLock&) = delete;

    // The lock file's path inside `directory`.
    static std::string file_of(const std::string& directory);
    // "process <pid> on <host>" when a process holds `directory`'s lock, "" when none does (or
    // there is no lock file). Takes nothing.
    static std::string holder_of(const std::string& directory);

private:
    std::string path_;
    int descriptor_ = -1;
};

}  // namespace mixgpt
