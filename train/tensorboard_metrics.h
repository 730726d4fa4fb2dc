// The records of metrics.jsonl (train/metrics.h) as TensorBoard scalars, into an event file of
// `train --tensorboard DIR` (train/event_file.h); MetricsWriter writes both. Each value at its
// record's step, as a float32 simple_value (NaN where metrics.jsonl has null), tagged
//
//   train/loss, train/lr, train/grad_norm, train/skipped_total, train/tokens,
//   train/tokens_per_second, train/ms_per_step, train/memory_bytes
//   train/loss_scale                               runs with loss scaling (fp16 by default)
//   train/mfu                                      when the device's peak is known (--peak-tflops)
//   train/spike_skips                              runs with the loss-spike guard (--skip-spikes)
//   train/fp8_saturated/{inputs,weights,gradients} fp8 runs
//   val/loss, val/perplexity, val/tokens           each evaluation
//   val/grad_zero_fraction                         when measured (mixgpt study)
//   task/<task file's name>/{acc,acc_norm}         each task evaluation (--task-eval)
//   telemetry/<quantity>[/<layer>]                 each measured step (--telemetry-interval,
//                                                  train/telemetry_record.h's telemetry_scalars)
//   telemetry/{grad,output}_log2/<layer>           histograms of the same steps (telemetry_histograms;
//                                                  grad_log2/model: the tensors outside the blocks)
//
// A run writes a SessionLog START at the first step it writes (its start step + 1): TensorBoard
// then drops the events of that step and later read from the folder's earlier files, the steps
// a resumed run redoes, as metrics.jsonl drops their lines. Evaluations flush the file.
#pragma once

#include <cstdint>
#include <string>

#include "train/event_file.h"
#include "train/metrics.h"

namespace mixgpt {

class TensorBoardMetrics {
public:
    // A new event file in `directory` (EventFile); loss_scaled: the run scales its loss.
    TensorBoardMetrics(const std::string& directory, bool loss_scaled);

    // The run goes on from `step` (0: a fresh run): a SessionLog START at step + 1.
    void write_start(int64_t step);
    void write(const TrainMetrics& metrics);
    void write(const EvalMetrics& metrics);      // and flushes
    void write(const TaskEvalMetrics& metrics);  // and flushes
    void write(const TelemetryRecord& record);

private:
    EventFile file_;
    bool loss_scaled_;
};

}  // namespace mixgpt
