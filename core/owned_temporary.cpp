#include "core/owned_temporary.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "core/paths.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;

// The writer a folder's marker names; false when there is no marker or it does not parse.
bool marker_writer(const fs::path& folder, ProcessIdentity& writer) {
    std::ifstream file(folder / kTemporaryMarkerName);
    std::string text;
    if (!std::getline(file, text)) return false;
    char tool[64] = {}, host[256] = {};
    long long pid = 0;
    unsigned long long start = 0;
    if (std::sscanf(text.c_str(), "mixgpt-temporary tool %63s pid %lld start %llu host %255s", tool, &pid,
                    &start, host) != 4)
        return false;
    writer.pid = pid;
    writer.start = start;
    writer.host = host;
    return true;
}

bool holds_an_input(const fs::path& path, const std::vector<std::string>& inputs) {
    for (const std::string& input : inputs)
        if (!input.empty() && path_lies_within(input, path.string())) return true;
    return false;
}

bool is_kind(const fs::path& path, fs::file_type kind) {
    std::error_code error;
    return fs::symlink_status(path, error).type() == kind;
}

}  // namespace

std::string temporary_marker_text(const std::string& tool, const ProcessIdentity& writer) {
    return "mixgpt-temporary tool " + tool + " pid " + std::to_string(writer.pid) + " start " +
           std::to_string(writer.start) + " host " + writer.host + "\n";
}

void create_owned_folder(const std::string& path, const std::string& tool) {
    std::error_code error;
    const bool created = fs::create_directory(path, error);
    MIXGPT_REQUIRE(!error, path + ": cannot create (" + error.message() + ")");
    MIXGPT_REQUIRE(created, path + ": exists already, and is not this process's: move it away");
    std::ofstream marker(fs::path(path) / kTemporaryMarkerName);
    marker << temporary_marker_text(tool, ProcessIdentity::self());
    marker.close();
    if (!marker) {
        fs::remove_all(path, error);
        throw Error(path + ": cannot write its marker " + kTemporaryMarkerName);
    }
}

void release_owned_folder(const std::string& path) {
    std::error_code ignored;
    fs::remove(fs::path(path) / kTemporaryMarkerName, ignored);
}

std::string owned_file_temporary(const std::string& final_path) {
    const ProcessIdentity self = ProcessIdentity::self();
    return final_path + ".tmp-" + std::to_string(self.pid) + "-" + std::to_string(self.start);
}

bool adopt_stale_owned_folder(const std::string& path, const std::string& tool) {
    ProcessIdentity writer;
    if (!is_kind(path, fs::file_type::directory) || !marker_writer(path, writer) || !writer.is_gone())
        return false;
    std::ofstream marker(fs::path(path) / kTemporaryMarkerName, std::ios::trunc);
    marker << temporary_marker_text(tool, ProcessIdentity::self());
    marker.close();
    MIXGPT_REQUIRE(marker.good(), path + ": cannot write its marker " + kTemporaryMarkerName);
    return true;
}

std::vector<std::string> remove_stale_owned_folders(const std::string& final_path,
                                                    const std::vector<std::string>& inputs) {
    const fs::path final(final_path);
    const fs::path parent = final.has_parent_path() ? final.parent_path() : fs::path(".");
    const std::string prefix = final.filename().string() + ".";
    std::vector<std::string> removed;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(parent, error)) {
        ProcessIdentity writer;
        if (entry.path().filename().string().rfind(prefix, 0) != 0 ||
            !is_kind(entry.path(), fs::file_type::directory) || !marker_writer(entry.path(), writer) ||
            !writer.is_gone() || holds_an_input(entry.path(), inputs))
            continue;
        std::error_code failed;
        fs::remove_all(entry.path(), failed);
        if (!failed) removed.push_back(entry.path().string());
    }
    return removed;
}

std::vector<std::string> remove_stale_owned_files(const std::string& directory,
                                                  const std::vector<std::string>& inputs) {
    static const std::regex temporary_name(R"(.+\.tmp-([0-9]{1,9})-([0-9]{1,19}))");
    std::vector<std::string> removed;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
        const std::string name = entry.path().filename().string();
        std::smatch match;
        if (!std::regex_match(name, match, temporary_name) ||
            !is_kind(entry.path(), fs::file_type::regular) || holds_an_input(entry.path(), inputs))
            continue;
        ProcessIdentity writer;
        writer.pid = std::stoll(match[1].str());
        writer.start = std::stoull(match[2].str());
        writer.host = host_name();
        std::error_code failed;
        if (writer.is_gone() && fs::remove(entry.path(), failed)) removed.push_back(entry.path().string());
    }
    return removed;
}

}  // namespace mixgpt
