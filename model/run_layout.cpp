#include "model/run_layout.h"

#include <filesystem>

#include "core/error.h"
#include "core/paths.h"

namespace mixgpt {

namespace fs = std::filesystem;

std::string run_directory_of(const std::string& source, const std::string& checkpoint_path) {
    if (fs::is_directory(source)) return source;
    fs::path directory = fs::path(checkpoint_path).parent_path();
    if (directory.filename() == "checkpoints") directory = directory.parent_path();
    return directory.empty() ? "." : directory.string();
}

void require_not_a_run_file(const std::string& path, const std::string& run_directory, const std::string& option) {
    std::error_code error;
    if (!fs::exists(path, error)) return;
    for (const char* entry : kRunEntries) {
        const std::string run_entry = (fs::path(run_directory) / entry).string();
        if (fs::exists(run_entry, error) && path_lies_within(path, run_entry))
            throw Error(path + ": is " + run_directory + "'s " + entry +
                        "; an output never replaces a run's own files: choose another " + option);
    }
}

}  // namespace mixgpt
