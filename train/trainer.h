// `mixgpt train` as a library call: builds the backend, model, data loader and optimizer from
// TrainOptions, resumes if asked, runs the steps with periodic evaluation and checkpoints, and
// stops cleanly on SIGINT/SIGTERM (checkpoint written, normal return).
//
// Run directory (options.output_dir):
//   metrics.jsonl                 train/metrics.h
//   checkpoints/step_<8 digits>.h5  model/checkpoint.h; the newest keep_checkpoints are kept
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "train/metrics.h"
#include "train/train_options.h"

namespace mixgpt {

struct TrainResult {
    int64_t steps_done = 0;    // optimizer steps completed, those before a resume included
    double last_loss = 0;      // training loss of the last step run (NaN if none ran)
    double last_val_loss = 0;  // NaN if no evaluation ran
    bool stopped_by_signal = false;
    std::string last_checkpoint;  // "" if none was written
    std::string metrics_path;
};

// Called after every step's metrics are known (tests use it to observe or to stop a run).
using StepObserver = std::function<void(const TrainMetrics& metrics)>;

// Throws Error on bad options or data, a mismatched checkpoint, or divergence (too many
// consecutive non-finite steps; the last checkpoint is left as it was).
TrainResult run_training(const TrainOptions& options, const StepObserver& observer = nullptr);

// --dry-run: the plan and the memory needed under each recompute policy.
void print_memory_plans(const TrainOptions& options, std::ostream& out);

std::string metrics_path(const std::string& output_dir);
std::string checkpoint_directory(const std::string& output_dir);

}  // namespace mixgpt
