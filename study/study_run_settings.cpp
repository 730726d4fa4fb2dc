#include "study/study_run_settings.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "model/newest_checkpoint.h"

namespace mixgpt {
namespace {

// Options that say how a run is executed, not what it trains or reports.
bool is_how_it_runs(const std::string& name) {
    return is_run_mechanics(name) || name == "device" || name == "device_index" || name == "threads" ||
           name == "checkpoint_interval" || name == "keep_checkpoints" || name == "max_bad_steps";
}

std::optional<std::string> recorded_option(const Checkpoint& checkpoint, const std::string& name) {
    const auto found = std::find_if(checkpoint.options.begin(), checkpoint.options.end(),
                                    [&name](const auto& option) { return option.first == name; });
    if (found == checkpoint.options.end()) return std::nullopt;
    return found->second;
}

}  // namespace

void require_study_run_settings(const std::string& run_directory, const TrainOptions& requested,
                                const std::string& dataset_identity) {
    const std::optional<FoundCheckpoint> newest = read_newest_checkpoint(
        (std::filesystem::path(run_directory) / "checkpoints").string(), CheckpointContent::weights);
    if (!newest) return;
    const Checkpoint& recorded = newest->checkpoint;
    for (const auto& [name, value] : describe_options(requested)) {
        if (is_how_it_runs(name)) continue;
        const std::string was = recorded_option(recorded, name).value_or("(not recorded)");
        MIXGPT_REQUIRE(was == value, run_directory + ": its run has " + name + " " + was +
                                         ", this study asks for " + value +
                                         "; move that run away or give the study another --output-dir");
    }
    const std::optional<std::string> trained_on = recorded_option(recorded, "dataset_identity");
    MIXGPT_REQUIRE(!trained_on || *trained_on == dataset_identity,
                   run_directory + ": its run was trained on another dataset than the one at " +
                       requested.dataset +
                       " now (identities differ); move that run away or give the study another --output-dir");
}

}  // namespace mixgpt
