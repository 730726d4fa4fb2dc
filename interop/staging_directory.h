// A folder written under a temporary name and renamed into place when complete, so that a failed
// export or import leaves nothing that looks finished.
#pragma once

#include <string>

namespace mixgpt::interop {

class StagingDirectory {
public:
    // Refuses (Error) when `final_path` exists and is not an empty directory, unless `replace`.
    StagingDirectory(std::string final_path, bool replace);
    StagingDirectory(const StagingDirectory&) = delete;
    StagingDirectory& operator=(const StagingDirectory&) = delete;
    ~StagingDirectory();  // removes the temporary folder unless committed

    const std::string& path() const { return temporary_path_; }  // write here
    void commit();  // replaces final_path with the temporary folder

private:
    std::string final_path_;
    std::string temporary_path_;
    bool committed_ = false;
};

}  // namespace mixgpt::interop
