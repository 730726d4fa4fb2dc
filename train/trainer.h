// `mixgpt train` as a library call: builds the backend, model, data loader and optimizer from
// TrainOptions, resumes if asked, runs the steps with periodic evaluation and checkpoints, and
// stops cleanly on SIGINT/SIGTERM (checkpoint written, normal return).
//
// Data parallelism: started by mpirun or srun, every process is one rank (train/README.md). Each
// rank trains on its own shard of every global batch; rank 0 alone logs, writes the metrics and
// writes checkpoints (gathered from all ranks, independent of the number of ranks, so a run can
// resume with another number of ranks, ZeRO-1 on or off). Stopping on a signal is agreed by all
// ranks at the end of a step.
//
// Run directory (options.output_dir, on rank 0's file system):
//   metrics.jsonl                 train/metrics.h
//   checkpoints/step_<8 digits>.h5  model/checkpoint.h; the newest keep_checkpoints are kept
//   eval.json                     with --task-eval, after the last step (train/task_eval.h)
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "dist/communicator.h"
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
    int rank = 0;  // this process's rank: print summaries on rank 0 only
};

// Called after every step's metrics are known (tests use it to observe or to stop a run).
using StepObserver = std::function<void(const TrainMetrics& metrics)>;
// Tests only: given each micro-batch this rank reads for step `step` (1-based), returns the (B, T+1)
// windows to train on instead, valid until the next call (a test plants a corrupted batch with it).
using BatchEditor = std::function<const int32_t*(int64_t step, const Batch& batch)>;

// Throws Error on bad options or data, a mismatched checkpoint, divergence (too many consecutive
// non-finite steps; the last checkpoint is left as it was) or too many held loss spikes in a row
// (train/spike_guard.h; a checkpoint is written first).
TrainResult run_training(const TrainOptions& options, const StepObserver& observer = nullptr,
                         const BatchEditor& edit_batch = nullptr);
// The same with a communicator given by the caller instead of the one the launch implies (tests
// run one rank alone, or all ranks of an MPI job they started themselves).
TrainResult run_training(const TrainOptions& options, Communicator& communicator,
                         const StepObserver& observer = nullptr, const BatchEditor& edit_batch = nullptr);

std::string metrics_path(const std::string& output_dir);
std::string checkpoint_directory(const std::string& output_dir);

}  // namespace mixgpt
