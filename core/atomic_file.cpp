#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/owned_temporary.h"

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
    : final_path_(std::move(final_path)), temporary_path_(owned_file_temporary(final_path_)) {}

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
