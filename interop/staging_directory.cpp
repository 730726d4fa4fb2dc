#include "interop/staging_directory.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/directory_lock.h"
#include "core/error.h"
#include "core/log.h"

namespace mixgpt::interop {

namespace fs = std::filesystem;
namespace {

constexpr const char* kTemporaryMarker = ".tmp-";
constexpr const char* kReplacedMarker = ".replaced.tmp-";

// "out/" and "out" are the same folder; the temporary one goes beside it, not inside.
std::string without_trailing_separator(const std::string& path) {
    fs::path normal = fs::path(path).lexically_normal();
    if (!normal.has_filename() && normal.has_parent_path()) normal = normal.parent_path();
    return normal.string();
}

// `path` with symbolic links and "..": what it names on disk, existing or not.
fs::path resolved(const std::string& path) {
    std::error_code error;
    const fs::path absolute = fs::absolute(path, error);
    const fs::path canonical = fs::weakly_canonical(absolute, error);
    return error ? absolute.lexically_normal() : canonical;
}

// Whether `inner` is `outer` or lies inside it.
bool is_within(const fs::path& inner, const fs::path& outer) {
    auto o = outer.begin();
    auto i = inner.begin();
    for (; o != outer.end(); ++o, ++i) {
        if (o->empty()) continue;  // a trailing separator
        if (i == inner.end() || *i != *o) return false;
    }
    return true;
}

bool process_is_gone(const std::string& digits) {
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
        return false;
    const pid_t writer = static_cast<pid_t>(std::stol(digits));
    return writer > 0 && writer != ::getpid() && ::kill(writer, 0) != 0 && errno == ESRCH;
}

// Removes "<final>.tmp-<pid>" and "<final>.replaced.tmp-<pid>" left by writers that are gone.
void remove_stale_staging(const std::string& final_path) {
    const fs::path final(final_path);
    const fs::path parent = final.has_parent_path() ? final.parent_path() : fs::path(".");
    const std::string name = final.filename().string();
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(parent, error)) {
        const std::string entry_name = entry.path().filename().string();
        for (const std::string marker : {kReplacedMarker, kTemporaryMarker}) {
            const std::string prefix = name + marker;
            if (entry_name.compare(0, prefix.size(), prefix) != 0 ||
                !process_is_gone(entry_name.substr(prefix.size())))
                continue;
            std::error_code ignored;
            if (fs::remove_all(entry.path(), ignored) != static_cast<std::uintmax_t>(-1))
                log_info("removed " + entry.path().string() + " (a temporary whose writer is gone)");
            break;
        }
    }
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
    const fs::path output = resolved(final);
    for (const std::string& input : inputs) {
        if (input.empty()) continue;
        MIXGPT_REQUIRE(!is_within(resolved(input), output),
                       final + ": " + (resolved(input) == output ? "is" : "contains") + " the input " +
                           input + "; an output never replaces what the command reads: choose another " +
                           option);
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
    MIXGPT_REQUIRE(replace || fs::is_empty(final, error),
                   final + ": exists and is not empty (--force replaces it)");
}

StagingDirectory::StagingDirectory(std::string final_path, bool replace,
                                   const std::vector<std::string>& inputs, const std::string& option)
    : final_path_(without_trailing_separator(final_path)),
      temporary_path_(final_path_ + kTemporaryMarker + std::to_string(::getpid())) {
    require_replaceable(final_path_, replace, inputs, option);
    std::error_code error;
    remove_stale_staging(final_path_);
    fs::remove_all(temporary_path_, error);
    fs::create_directories(temporary_path_, error);
    MIXGPT_REQUIRE(!error, temporary_path_ + ": cannot create (" + error.message() + ")");
}

StagingDirectory::~StagingDirectory() {
    if (committed_) return;
    std::error_code ignored;
    fs::remove_all(temporary_path_, ignored);
}

// The old folder is renamed aside before the new one takes its name, so that <final> is either
// the old folder or the new one at every moment, and the old one is removed last.
void StagingDirectory::commit() {
    std::error_code error;
    const std::string replaced = final_path_ + kReplacedMarker + std::to_string(::getpid());
    const bool exists = fs::exists(final_path_, error);
    if (exists) {
        const std::string holder = DirectoryLock::holder_of(final_path_);
        MIXGPT_REQUIRE(holder.empty(), final_path_ + ": a run directory in use by " + holder +
                                           " since this began; not replaced");
        fs::rename(final_path_, replaced, error);
        MIXGPT_REQUIRE(!error, final_path_ + ": cannot replace (" + error.message() + ")");
    }
    fs::rename(temporary_path_, final_path_, error);
    if (error) {
        std::error_code ignored;
        if (exists) fs::rename(replaced, final_path_, ignored);
        throw Error(final_path_ + ": cannot rename the finished folder into place (" + error.message() + ")");
    }
    committed_ = true;
    if (exists) fs::remove_all(replaced, error);
}

}  // namespace mixgpt::interop
