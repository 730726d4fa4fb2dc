// Helpers shared by every test binary (unit, GPU and multi-rank tests): a temporary directory,
// the message of an expected Error, environment variables set for a scope, and stderr captured
// for a scope. Header-only, so that tests/mpi
// (built from its own sources) can use it too.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/error.h"

namespace mixgpt::test {

// A fresh directory under the system's temporary directory, named <prefix>_<pid>_<n> so that it
// is unique to this process and to this instance; removed with its contents when the object goes.
class TempDirectory {
public:
    explicit TempDirectory(const std::string& prefix = "mixgpt_test")
        : path_(std::filesystem::temp_directory_path() /
                (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(next_instance_++))) {
        std::filesystem::remove_all(path_);  // a leftover of an earlier process with the same pid
        std::filesystem::create_directories(path_);
    }
    ~TempDirectory() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDirectory(const TempDirectory&) = delete;
    TempDirectory& operator=(const TempDirectory&) = delete;

    std::string path() const { return path_.string(); }
    // The path of `name` inside.
    std::string file(const std::string& name) const { return (path_ / name).string(); }
    // Writes `content` (binary) to `name` inside, making its parent directories; returns the path.
    std::string write(const std::string& name, const std::string& content) const {
        const std::filesystem::path path = path_ / name;
        std::filesystem::create_directories(path.parent_path());
        std::ofstream(path, std::ios::binary) << content;
        return path.string();
    }

private:
    static inline std::atomic<int> next_instance_{0};
    std::filesystem::path path_;
};

// The message of the mixgpt::Error that `action` throws; "" when it throws none.
inline std::string error_of(const std::function<void()>& action) {
    try {
        action();
    } catch (const Error& error) {
        return error.what();
    }
    return "";
}

// Environment variables set (or, for a null value, removed) while it lives (and
// for the children spawned meanwhile); the previous values come back when it ends.
class ScopedEnvironment {
public:
    explicit ScopedEnvironment(const std::vector<std::pair<std::string, const char*>>& values) {
        for (const auto& [name, value] : values) {
            const char* previous = std::getenv(name.c_str());
            saved_.push_back({name, previous != nullptr, previous != nullptr ? previous : ""});
            if (value != nullptr)
                setenv(name.c_str(), value, 1);
            else
                unsetenv(name.c_str());
        }
    }
    ~ScopedEnvironment() {
        for (const Saved& entry : saved_) {
            if (entry.was_set)
                setenv(entry.name.c_str(), entry.value.c_str(), 1);
            else
                unsetenv(entry.name.c_str());
        }
    }
    ScopedEnvironment(const ScopedEnvironment&) = delete;
    ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

private:
    struct Saved {
        std::string name;
        bool was_set;
        std::string value;
    };
    std::vector<Saved> saved_;
};

// What is written to stderr while it lives (gtest's capture), read once with take(). The capture
// ends with the object even when a test throws, so the next one starts clean.
class CapturedStderr {
public:
    CapturedStderr() { ::testing::internal::CaptureStderr(); }
    ~CapturedStderr() {
        if (!taken_) ::testing::internal::GetCapturedStderr();
    }
    CapturedStderr(const CapturedStderr&) = delete;
    CapturedStderr& operator=(const CapturedStderr&) = delete;

    std::string take() {
        taken_ = true;
        return ::testing::internal::GetCapturedStderr();
    }

private:
    bool taken_ = false;
};

}  // namespace mixgpt::test
