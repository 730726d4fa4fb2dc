#include "core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/error.h"

namespace mixgpt {
namespace {

bool same_file(const struct stat& a, const struct stat& b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// 1 or 2 when `target` is this process's standard output or error, else -1.
int standard_stream_of(const struct stat& target) {
    for (const int descriptor : {STDOUT_FILENO, STDERR_FILENO}) {
        struct stat stream {};
        if (::fstat(descriptor, &stream) == 0 && same_file(stream, target)) return descriptor;
    }
    return -1;
}

void require_not_an_input(const std::string& path, const struct stat& target,
                          const std::vector<std::string>& inputs, const std::string& option) {
    for (const std::string& input : inputs) {
        struct stat read {};
        if (input.empty() || ::stat(input.c_str(), &read) != 0 || !S_ISREG(read.st_mode) ||
            !same_file(read, target))
            continue;
        throw Error(path + ": is an input of this command" + (input == path ? "" : " (" + input + ")") +
                    "; an output never replaces what the command reads: choose another " +
                    (option.empty() ? "output" : option));
    }
}

// Where a new file named `path` goes: through a symbolic link whose target does not exist yet (a
// dangling link), that target, so that the link stays; `path` itself otherwise.
std::string new_file_path(const std::string& path) {
    namespace fs = std::filesystem;
    fs::path at(path);
    std::error_code error;
    for (int links = 0; links < 40 && fs::is_symlink(fs::symlink_status(at, error)); ++links) {
        const fs::path target = fs::read_symlink(at, error);
        if (error) break;
        at = target.is_absolute() ? target : at.parent_path() / target;
    }
    return at.string();
}

}  // namespace

OutputFile::OutputFile(std::string path, const std::vector<std::string>& inputs, const std::string& option)
    : path_(std::move(path)) {
    struct stat target {};
    const bool exists = ::stat(path_.c_str(), &target) == 0;  // through symbolic links
    if (exists && S_ISREG(target.st_mode)) require_not_an_input(path_, target, inputs, option);
    descriptor_ = exists ? standard_stream_of(target) : -1;
    standard_stream_ = descriptor_ >= 0;
    if (standard_stream_) return;
    if (exists && !S_ISREG(target.st_mode)) {
        descriptor_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (descriptor_ < 0) throw Error(path_ + ": cannot open for writing (" + std::strerror(errno) + ")");
        return;
    }
    const std::string destination =
        exists ? std::filesystem::canonical(path_).string() : new_file_path(path_);
    replacement_.emplace(destination);
    descriptor_ =
        ::open(replacement_->temporary_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (descriptor_ < 0)
        throw Error(path_ + ": cannot create " +
                    (exists || destination == path_ ? "" : "its link's target " + destination + " ") + "(" +
                    std::strerror(errno) + ")");
}

OutputFile::~OutputFile() {
    if (!standard_stream_ && descriptor_ >= 0) ::close(descriptor_);
}

void OutputFile::write(const std::string& content) {
    MIXGPT_REQUIRE(descriptor_ >= 0, path_ + ": written already");
    if (standard_stream_) {  // after what the process printed there
        std::cout.flush();
        std::cerr.flush();
        std::fflush(descriptor_ == STDOUT_FILENO ? stdout : stderr);
    }
    const auto fail = [this](int reason) {
        throw Error(path_ + ": cannot write (" + std::strerror(reason) + ")");
    };
    for (size_t done = 0; done < content.size();) {
        const ssize_t wrote = ::write(descriptor_, content.data() + done, content.size() - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) fail(wrote < 0 ? errno : EIO);
        done += static_cast<size_t>(wrote);
    }
    if (standard_stream_) {
        descriptor_ = -1;
        return;
    }
    if (replacement_ && ::fsync(descriptor_) != 0) fail(errno);
    const int descriptor = descriptor_;
    descriptor_ = -1;
    if (::close(descriptor) != 0) fail(errno);
    if (replacement_) replacement_->commit();
}

void write_whole_file(const std::string& path, const std::string& content) {
    OutputFile(path).write(content);
}

}  // namespace mixgpt
