#include "train/run_directory.h"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "core/output_file.h"
#include "core/paths.h"
#include "model/run_layout.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRunIdFile = "run_id";
constexpr const char* kReplacedPrefix = "replaced-";

bool starts_with(const std::string& text, const std::string& prefix) {
    return text.compare(0, prefix.size(), prefix) == 0;
}

// One of kRunEntries, or its temporary while it is written (core/atomic_file.h).
bool is_run_entry(const std::string& name) {
    for (const std::string entry : kRunEntries)
        if (name == entry || starts_with(name, entry + ".tmp-")) return true;
    return false;
}

// "replaced-20251126-013000", or with "-2", "-3", ... when that exists already.
fs::path replaced_folder(const fs::path& directory) {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
    fs::path folder = directory / (std::string(kReplacedPrefix) + stamp);
    for (int n = 2; fs::exists(folder); ++n)
        folder = directory / (std::string(kReplacedPrefix) + stamp + "-" + std::to_string(n));
    return folder;
}

}  // namespace

void require_run_apart_from(const std::string& output_dir, const std::string& tensorboard_dir,
                            const std::vector<std::string>& datasets) {
    for (const std::string& dataset : datasets) {
        if (!fs::is_directory(dataset)) continue;
        MIXGPT_REQUIRE(!path_lies_within(output_dir, dataset),
                       "output-dir: " + output_dir + " lies in the dataset " + dataset +
                           "; a run is written apart from the data it reads: choose another --output-dir");
        MIXGPT_REQUIRE(tensorboard_dir.empty() || !path_lies_within(tensorboard_dir, dataset),
                       "tensorboard: " + tensorboard_dir + " lies in the dataset " + dataset +
                           "; a run is written apart from the data it reads: choose another --tensorboard");
    }
}

RunDirectory::RunDirectory(std::string path) : path_(std::move(path)) {
    std::error_code error;
    created_ = !fs::exists(path_, error);
    lock_.emplace(path_);
}

RunDirectory::~RunDirectory() {
    lock_.reset();
    std::error_code ignored;
    if (created_ && fs::is_empty(path_, ignored)) fs::remove(path_, ignored);
}

std::string RunDirectory::checkpoints() const { return (fs::path(path_) / "checkpoints").string(); }

std::string RunDirectory::run_files() const {
    std::string found;
    const auto add = [&found](const std::string& what) { found += (found.empty() ? "" : ", ") + what; };
    std::error_code error;
    size_t checkpoint_entries = 0;
    for (auto entry = fs::directory_iterator(checkpoints(), error);
         !error && entry != fs::directory_iterator(); entry.increment(error))
        ++checkpoint_entries;
    if (checkpoint_entries > 0)
        add(format("checkpoints/ (%zu file%s)", checkpoint_entries, checkpoint_entries == 1 ? "" : "s"));
    for (const char* name : {"metrics.jsonl", kRunIdFile})
        if (fs::exists(fs::path(path_) / name, error)) add(name);
    return found;
}

std::string RunDirectory::run_id() const {
    std::ifstream file(fs::path(path_) / kRunIdFile);
    std::string id;
    file >> id;
    return id;
}

void RunDirectory::write_run_id(const std::string& run_id) const {
    write_whole_file((fs::path(path_) / kRunIdFile).string(), run_id + "\n");
}

std::string RunDirectory::move_run_aside() const {
    const std::string lock_name = fs::path(DirectoryLock::file_of(path_)).filename().string();
    std::vector<fs::path> entries;  // listed first: the directory changes while they move
    for (const fs::directory_entry& entry : fs::directory_iterator(path_)) {
        const std::string name = entry.path().filename().string();
        if (name == lock_name || starts_with(name, kReplacedPrefix)) continue;
        MIXGPT_REQUIRE(is_run_entry(name),
                       path_ + ": holds " + entry.path().string() +
                           ", which is not part of a run; --overwrite moves only a run's files "
                           "(checkpoints/, metrics.jsonl, run_id, eval.json): move it elsewhere, or train "
                           "into another directory");
        entries.push_back(entry.path());
    }
    const fs::path folder = replaced_folder(path_);
    make_directories(folder.string());
    for (const fs::path& entry : entries) {
        std::error_code error;
        fs::rename(entry, folder / entry.filename(), error);
        MIXGPT_REQUIRE(!error, entry.string() + ": cannot move it into " + folder.string() + " (" +
                                   error.message() + "); the previous run is partly there");
    }
    return folder.string();
}

}  // namespace mixgpt
