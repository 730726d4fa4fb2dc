#include "interop/staging_directory.h"

#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "core/owned_temporary.h"
#include "core/paths.h"

namespace mixgpt::interop {

namespace fs = std::filesystem;
namespace {

constexpr const char* kTemporaryMarker = ".tmp-";
constexpr const char* kReplacedMarker = ".replaced.tmp-";

// Empty, or holding only the lock file of a writer that is gone (left by kill -9).
bool is_empty_folder(const std::string& folder) {
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder, error))
        if (entry.path() != fs::path(DirectoryLock::file_of(folder))) return false;
    return !error;
}

}  // namespace

void stop_if_signalled(const StopSignalGuard& signals, const std::string& output) {
    MIXGPT_REQUIRE(!signals.stop_requested(),
                   format("%s: stopped by signal %d before it was complete; nothing was written",
                          output.c_str(), signals.signal_number()));
}

void require_replaceable(const std::string& final_path, bool replace, const std::vector<std::string>& inputs,
                         const std::string& option) {
    const std::string final = without_trailing_separator(final_path);
    for (const std::string& input : inputs) {
        if (input.empty() || !path_lies_within(input, final)) continue;
        throw Error(final + ": " + (resolved_path(input) == resolved_path(final) ? "is" : "contains") +
                    " the input " + input +
                    "; an output never replaces what the command reads: choose another " + option);
    }
    std::error_code error;
    const fs::file_status status = fs::status(final, error);
    if (!fs::exists(status)) return;
    MIXGPT_REQUIRE(fs::is_directory(status),
                   final + ": is a file, not a folder; " + option +
                       " names the folder to write (--force replaces only a folder)");
    const std::string holder = DirectoryLock::holder_of(final);
    MIXGPT_REQUIRE(holder.empty(),
                   final + ": a run directory in use by " + holder + "; choose another " + option);
    MIXGPT_REQUIRE(replace || is_empty_folder(final),
                   final + ": exists and is not empty (--force replaces it)");
}

StagingDirectory::StagingDirectory(std::string final_path, bool replace,
                                   const std::vector<std::string>& inputs, const std::string& option,
                                   const std::string& tool)
    : final_path_(without_trailing_separator(final_path)),
      temporary_path_(final_path_ + kTemporaryMarker + std::to_string(::getpid())),
      tool_(tool) {
    require_replaceable(final_path_, replace, inputs, option);
    std::error_code error;
    created_final_ = !fs::exists(final_path_, error);
    lock_.emplace(final_path_);
    for (const std::string& removed : remove_stale_owned_folders(final_path_, inputs))
        log_info("removed " + removed + " (a temporary whose writer is gone)");
    create_owned_folder(temporary_path_, tool_);
}

StagingDirectory::~StagingDirectory() {
    std::error_code ignored;
    if (!committed_) fs::remove_all(temporary_path_, ignored);
    lock_.reset();
    if (!committed_ && created_final_) fs::remove(final_path_, ignored);  // only while empty
}

// The old folder is moved aside before the new one takes its name, so that <final> is either
// the old folder or the new one at every moment, and the old one is removed last. <final> exists:
// the lock is in it.
void StagingDirectory::commit() {
    const std::string replaced = final_path_ + kReplacedMarker + std::to_string(::getpid());
    create_owned_folder(replaced, tool_);
    const fs::path aside = fs::path(replaced) / fs::path(final_path_).filename();
    std::error_code error;
    fs::rename(final_path_, aside, error);
    if (error) {
        std::error_code ignored;
        fs::remove_all(replaced, ignored);
        throw Error(final_path_ + ": cannot replace (" + error.message() + ")");
    }
    release_owned_folder(temporary_path_);
    fs::rename(temporary_path_, final_path_, error);
    if (error) {
        std::error_code ignored;
        fs::rename(aside, final_path_, ignored);
        throw Error(final_path_ + ": cannot rename the finished folder into place (" + error.message() + ")");
    }
    committed_ = true;
    fs::remove_all(replaced, error);
}

}  // namespace mixgpt::interop
