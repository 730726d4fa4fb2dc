#include "core/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace mixgpt {
namespace {

void fsync_path(const std::string& path, int flags) {
    const int descriptor = ::open(path.c_str(), flags);
    if (descriptor < 0) return;
    ::fsync(descriptor);
    ::close(descriptor);
}

}  // namespace

AtomicOutput::AtomicOutput(std::string final_path)
    : final_path_(std::move(final_path)),
      temporary_path_(final_path_ + ".tmp-" + std::to_string(::getpid())) {}

AtomicOutput::~AtomicOutput() {
    if (!committed_) std::remove(temporary_path_.c_str());
}

void AtomicOutput::commit() {
    fsync_path(temporary_path_, O_RDONLY);
    if (std::rename(temporary_path_.c_str(), final_path_.c_str()) != 0)
        throw Error(final_path_ + ": cannot rename temporary file into place");
    committed_ = true;
    const std::string directory = std::filesystem::path(final_path_).parent_path().string();
    fsync_path(directory.empty() ? "." : directory, O_RDONLY | O_DIRECTORY);
}

std::vector<std::string> remove_stale_temporaries(const std::string& directory) {
    std::vector<std::string> removed;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
        const std::string name = entry.path().filename().string();
        const size_t marker = name.rfind(".tmp-");
        if (marker == std::string::npos || marker == 0) continue;
        const std::string digits = name.substr(marker + 5);
        if (digits.empty() || digits.size() > 9 ||
            digits.find_first_not_of("0123456789") != std::string::npos)
            continue;
        const pid_t writer = static_cast<pid_t>(std::stol(digits));
        if (writer == ::getpid() || writer <= 0 || ::kill(writer, 0) == 0 || errno != ESRCH) continue;
        std::error_code ignored;
        if (std::filesystem::remove(entry.path(), ignored)) removed.push_back(entry.path().string());
    }
    return removed;
}

bool file_exists(const std::string& path) {
    std::error_code error;
    return std::filesystem::exists(path, error);
}

void make_directories(const std::string& directory) {
    if (directory.empty()) return;
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error) throw Error(directory + ": cannot create directory (" + error.message() + ")");
}

}  // namespace mixgpt
