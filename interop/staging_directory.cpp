#include "interop/staging_directory.h"

#include <unistd.h>

#include <filesystem>

#include "core/error.h"

namespace mixgpt::interop {

namespace fs = std::filesystem;
namespace {

// "out/" and "out" are the same folder; the temporary one goes beside it, not inside.
std::string without_trailing_separator(const std::string& path) {
    fs::path normal = fs::path(path).lexically_normal();
    if (!normal.has_filename() && normal.has_parent_path()) normal = normal.parent_path();
    return normal.string();
}

}  // namespace

StagingDirectory::StagingDirectory(std::string final_path, bool replace)
    : final_path_(without_trailing_separator(final_path)),
      temporary_path_(final_path_ + ".tmp-" + std::to_string(::getpid())) {
    std::error_code error;
    const bool occupied =
        fs::exists(final_path_) && !(fs::is_directory(final_path_) && fs::is_empty(final_path_));
    MIXGPT_REQUIRE(!occupied || replace, final_path_ + ": exists and is not empty (--force replaces it)");
    fs::remove_all(temporary_path_, error);
    fs::create_directories(temporary_path_, error);
    MIXGPT_REQUIRE(!error, temporary_path_ + ": cannot create (" + error.message() + ")");
}

StagingDirectory::~StagingDirectory() {
    if (committed_) return;
    std::error_code ignored;
    fs::remove_all(temporary_path_, ignored);
}

void StagingDirectory::commit() {
    std::error_code error;
    fs::remove_all(final_path_, error);
    MIXGPT_REQUIRE(!error, final_path_ + ": cannot replace (" + error.message() + ")");
    fs::rename(temporary_path_, final_path_, error);
    MIXGPT_REQUIRE(!error,
                   final_path_ + ": cannot rename the finished folder into place (" + error.message() + ")");
    committed_ = true;
}

}  // namespace mixgpt::interop
