#include "model/newest_checkpoint.h"

#include <filesystem>
#include <iterator>
#include <map>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

// Listings tried while checkpoints vanish before they are opened: each listing's newest is a
// checkpoint written since the last one, and opening one takes microseconds.
constexpr int kListings = 20;

bool still_there(const std::string& path) {
    std::error_code error;
    return std::filesystem::exists(path, error);
}

// The error without the path in front: it is said once, before the reason.
std::string without_path(const std::string& path, const Error& error) {
    const std::string message = error.what();
    const std::string prefix = path + ": ";
    return message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : message;
}

// One line when a newer checkpoint than `taken` was passed over.
void say_which(const std::string& taken, const std::map<std::string, std::string>& passed_over) {
    const auto newer = passed_over.upper_bound(taken);
    if (newer == passed_over.end()) return;
    const auto newest = std::prev(passed_over.end());
    const long others = std::distance(newer, passed_over.end()) - 1;
    log_warning(taken + ": taken, not the newest listed, " + newest->first + " (" + newest->second + ")" +
                (others > 0 ? format("; %ld more passed over", others) : ""));
}

}  // namespace

std::optional<FoundCheckpoint> read_newest_checkpoint(const std::string& directory,
                                                      CheckpointContent content) {
    std::map<std::string, std::string> passed_over;  // path -> why; names sort by step
    bool vanished = true;
    for (int listing = 0; listing < kListings && vanished; ++listing) {
        vanished = false;
        const std::vector<std::string> paths = list_checkpoints(directory);
        for (auto path = paths.rbegin(); path != paths.rend(); ++path) {
            if (passed_over.count(*path)) continue;
            try {
                FoundCheckpoint found{*path, read_checkpoint(*path, content)};
                say_which(found.path, passed_over);
                return found;
            } catch (const Error& error) {
                const bool gone = !still_there(*path);
                passed_over[*path] =
                    gone ? "it vanished before it was opened: a training run rotating its checkpoints"
                         : without_path(*path, error);
                vanished = vanished || gone;
            }
        }
    }
    MIXGPT_REQUIRE(!vanished,
                   format("%s: checkpoints vanished before they could be opened through %d listings",
                          directory.c_str(), kListings));
    if (passed_over.empty()) return std::nullopt;
    const auto newest = std::prev(passed_over.end());
    log_warning(format("%s: none of its %zu checkpoints can be read; the newest, ", directory.c_str(),
                       passed_over.size()) +
                newest->first + ": " + newest->second);
    return std::nullopt;
}

}  // namespace mixgpt
