#include "train/event_file.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "core/process_identity.h"
#include "train/event_records.h"

namespace mixgpt {
namespace {

constexpr std::chrono::seconds kFlushInterval{30};

// The host name with anything but letters, digits, '.', '-' and '_' replaced by '_'.
std::string file_name_host() {
    std::string host = host_name();
    for (char& c : host)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
    return host;
}

std::string new_event_file_name() {
    static std::atomic<int> opened{0};
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%010lld", static_cast<long long>(std::time(nullptr)));
    return std::string("events.out.tfevents.") + seconds + "." + file_name_host() + "." +
           std::to_string(getpid()) + "." + std::to_string(opened++);
}

}  // namespace

void require_event_folder_writable(const std::string& directory) {
    namespace fs = std::filesystem;
    fs::path folder = fs::absolute(directory);
    std::error_code error;
    while (!fs::exists(folder, error) && folder.has_relative_path()) folder = folder.parent_path();
    const std::string what = "tensorboard: " + directory + ": ";
    MIXGPT_REQUIRE(fs::is_directory(folder, error),
                   what + "cannot create the folder (" + folder.string() + " is not a folder)");
    MIXGPT_REQUIRE(access(folder.c_str(), W_OK | X_OK) == 0,
                   what + "cannot write in " + folder.string() + " (" + std::strerror(errno) + ")");
}

double event_wall_time() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

EventFile::EventFile(const std::string& directory) {
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    MIXGPT_REQUIRE(!error,
                   "tensorboard: " + directory + ": cannot create the folder (" + error.message() + ")");
    path_ = (std::filesystem::path(directory) / new_event_file_name()).string();
    file_ = std::fopen(path_.c_str(), "wbx");
    MIXGPT_REQUIRE(file_ != nullptr,
                   "tensorboard: " + path_ + ": cannot create the event file (" + std::strerror(errno) + ")");
    last_flush_ = std::chrono::steady_clock::now();
    write(file_version_event(event_wall_time()));
}

EventFile::~EventFile() {
    const bool flushed = std::fflush(file_) == 0;
    if (std::fclose(file_) != 0 || !flushed)
        log_warning("tensorboard: " + path_ + ": the last events could not be written (" +
                    std::strerror(errno) + ")");
}

void EventFile::write(const std::string& event) {
    const std::string record = frame_record(event);
    MIXGPT_REQUIRE(std::fwrite(record.data(), 1, record.size(), file_) == record.size(),
                   "tensorboard: " + path_ + ": cannot write (" + std::strerror(errno) + ")");
    if (std::chrono::steady_clock::now() - last_flush_ >= kFlushInterval) flush();
}

void EventFile::flush() {
    MIXGPT_REQUIRE(std::fflush(file_) == 0,
                   "tensorboard: " + path_ + ": cannot write (" + std::strerror(errno) + ")");
    last_flush_ = std::chrono::steady_clock::now();
}

}  // namespace mixgpt
