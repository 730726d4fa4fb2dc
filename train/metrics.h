// The training run's metrics file: JSON Lines, one object per line, flushed as written so a
// stopped run leaves only complete lines. Every line has "type" and "step":
//   {"type":"train","step":12,"loss":3.91,"lr":0.0006,"grad_norm":1.2,"loss_scale":65536,
//    "skipped":false,"skipped_total":0,"tokens":49152,"tokens_per_second":5230.1,"ms_per_step":783.1,
//    "memory_bytes":123456}
//   {"type":"eval","step":100,"val_loss":3.2,"val_perplexity":24.5,"val_tokens":65536}
//   (with TrainOptions::gradient_zero_stats also "grad_zero_fraction":0.013)
//   (train lines of a run with --z-loss also "z_loss":0.0012: the mean z-loss term, which "loss"
//    leaves out)
//   (train lines of a run with --skip-spikes also "spike_skipped":false,"spike_skips":0: whether the
//    loss-spike guard held this step's update, and the steps it held so far, train/spike_guard.h)
//   (train lines also "mfu":0.368 when the device's peak is known or given, --peak-tflops: model
//    FLOPs utilization, model/flops.h)
//   (train lines of an fp8 run also "fp8_saturated":{"inputs":0,"weights":0,"gradients":3}: the
//    elements the FP8 conversion clipped during the step, per tensor class, model/fp8_linears.h)
//   {"type":"task_eval","step":100,"task":"hellaswag","data":"hellaswag_val.jsonl","examples":10042,
//    "acc":0.2859,"acc_norm":0.2955,"chance":0.25}        (train/task_eval.h)
//   {"type":"telemetry","step":100,...}         (train --telemetry-interval: train/telemetry_record.h)
//   {"type":"resume","step":50}                  (a resumed run appends after this line; the lines
//                                                 past step 50 of the stopped run are removed)
// Non-finite numbers are written as null. With `train --tensorboard DIR` the same records also go
// to a TensorBoard event file in DIR (train/tensorboard_metrics.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "model/fp8_linears.h"
#include "train/telemetry_record.h"
#include "train/train_options.h"

namespace mixgpt {

class TensorBoardMetrics;

struct TrainMetrics {
    int64_t step = 0;  // optimizer steps completed, this one included
    double loss = 0, learning_rate = 0, grad_norm = 0, loss_scale = 1;
    double z_loss = -1;  // the step's mean z-loss term (--z-loss); < 0: off, not written
    double mfu = std::numeric_limits<double>::quiet_NaN();  // model FLOPs utilization; NaN: unknown, not written
    struct SpikeSkips {
        bool held = false;  // this step's update
        int64_t total = 0;
    };
    std::optional<SpikeSkips> spike_skips;  // with the loss-spike guard only
    bool skipped = false;
    int64_t skipped_total = 0;
    int64_t tokens = 0;  // tokens consumed since the start of training
    double tokens_per_second = 0, ms_per_step = 0;
    size_t memory_bytes = 0;
    bool fp8 = false;  // an fp8 run: fp8_saturated is written
    Fp8Saturation fp8_saturated;
};

struct EvalMetrics {
    int64_t step = 0;
    double val_loss = 0, val_perplexity = 0;
    int64_t val_tokens = 0;
    double grad_zero_fraction = -1;  // of the last step's gradient elements; < 0: not measured
};

struct TaskEvalMetrics {
    int64_t step = 0;
    std::string task, data;  // the task's format and file
    int64_t examples = 0;
    double acc = 0, acc_norm = 0;
    double chance = 0;  // the accuracy of guessing
};

// Makes `path` tell one history when a run resumes at `step`: rewrites it atomically without the
// lines past `step` (written after that checkpoint by the run that stopped) and without torn lines
// (a process killed mid-write). Returns the number of lines dropped; 0 when the file is missing.
int64_t truncate_metrics_after(const std::string& path, int64_t step);

// With `options.tensorboard_dir` set, throws Error "tensorboard: <folder>: <reason>" when that
// folder cannot be created or written, creating nothing: a run checks it before it starts.
void require_metrics_writable(const TrainOptions& options);

class MetricsWriter {
public:
    // Opens `path` for appending (append) or truncates it; throws Error naming the file. With
    // `options.tensorboard_dir` set, first opens a new event file there (the run's first, or a
    // resumed run's next), whose scalars follow the run's loss scaling and precision.
    MetricsWriter(const std::string& path, bool append, const TrainOptions& options = {});
    ~MetricsWriter();
    MetricsWriter(const MetricsWriter&) = delete;
    MetricsWriter& operator=(const MetricsWriter&) = delete;

    void write(const TrainMetrics& metrics);
    void write(const EvalMetrics& metrics);
    void write(const TaskEvalMetrics& metrics);
    void write(const TelemetryRecord& record);
    void write_resume(int64_t step);  // and the event file's SessionLog START
    const std::string& path() const { return path_; }

private:
    void write_line(const std::string& line);

    std::unique_ptr<TensorBoardMetrics> tensorboard_;  // null without --tensorboard
    std::string path_;
    std::FILE* file_ = nullptr;
};

}  // namespace mixgpt
