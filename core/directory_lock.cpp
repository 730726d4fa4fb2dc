#include "core/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/process_identity.h"

namespace mixgpt {
namespace {

constexpr const char* kLockFileName = "run.lock";

// "process <pid> on <host>" from the lock file's text "pid <pid> host <host>".
std::string describe_holder(int descriptor) {
    char text[512] = {};
    const ssize_t got = ::pread(descriptor, text, sizeof(text) - 1, 0);
    unsigned long pid = 0;
    char host[300] = {};
    if (got > 0 && std::sscanf(text, "pid %lu host %299s", &pid, host) == 2)
        return "process " + std::to_string(pid) + " on " + host;
    return "another process (it has not written its name yet)";
}

bool same_file(int descriptor, const std::string& path) {
    struct stat opened {
    }, named{};
    return ::fstat(descriptor, &opened) == 0 && ::stat(path.c_str(), &named) == 0 &&
           opened.st_dev == named.st_dev && opened.st_ino == named.st_ino;
}

}  // namespace

std::string DirectoryLock::file_of(const std::string& directory) {
    return (std::filesystem::path(directory) / kLockFileName).string();
}

DirectoryLock::DirectoryLock(const std::string& directory) : path_(file_of(directory)) {
    make_directories(directory);
    for (;;) {
        const int descriptor = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (descriptor < 0)
            throw Error(path_ + ": cannot create the run directory's lock file (" + std::strerror(errno) +
                        ")");
        if (::flock(descriptor, LOCK_EX | LOCK_NB) != 0) {
            const int reason = errno;
            const std::string holder = reason == EWOULDBLOCK ? describe_holder(descriptor) : "";
            ::close(descriptor);
            if (reason != EWOULDBLOCK) throw Error(path_ + ": cannot lock (" + std::strerror(reason) + ")");
            throw Error(directory + ": in use by " + holder + " (lock " + path_ +
                        "); wait for it to end, or use another directory");
        }
        if (same_file(descriptor, path_)) {
            descriptor_ = descriptor;
            break;
        }
        ::close(descriptor);  // the holder before us removed the file after we opened it
    }
    const std::string text = "pid " + std::to_string(::getpid()) + " host " + host_name() + "\n";
    if (::ftruncate(descriptor_, 0) != 0 ||
        ::pwrite(descriptor_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
        const std::string reason = std::strerror(errno);
        ::unlink(path_.c_str());
        ::close(descriptor_);
        throw Error(path_ + ": cannot write the lock file (" + reason + ")");
    }
}

DirectoryLock::~DirectoryLock() {
    // While still holding the lock (see the header), and only while the path names our file: a
    // directory renamed away (prepare --force, export --force) leaves the path to a newer holder.
    if (same_file(descriptor_, path_)) ::unlink(path_.c_str());
    ::close(descriptor_);
}

std::string DirectoryLock::holder_of(const std::string& directory) {
    const std::string path = file_of(directory);
    const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return "";
    std::string holder;
    if (::flock(descriptor, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK)
        holder = describe_holder(descriptor);
    ::close(descriptor);
    return holder;
}

}  // namespace mixgpt
