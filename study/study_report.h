// The precision study's report (study/precision_study.h): one summary per run, read from the
// run's metrics.jsonl and study_run.json, compared with the fp32 run of the same seed, and one
// summary per variant over its seeds; written as JSON (for scripts/plot_study.py and other
// readers) and as Markdown (for people).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "study/precision_study.h"
#include "study/study_telemetry.h"

namespace mixgpt {

struct StudyEvalPoint {
    int64_t step = 0;
    double val_loss = 0;
    double gap_to_fp32 = 0;  // val_loss - the same seed's fp32 run's at the same step; NaN without one
    double grad_zero_fraction = -1;  // < 0: not measured
    double train_seconds = 0;        // the run's training steps up to this one (their ms_per_step summed)
};

// What `mixgpt bench` measured for the run's precision, stored in study_run.json.
struct StudyBench {
    double tokens_per_second = 0, ms_per_step = 0;
    size_t peak_memory_bytes = 0;
    std::string device;
    bool emulated = false;  // the CPU backend emulates tf32, bf16 and fp16: speed means nothing
};

struct StudyRunSummary {
    StudyVariant variant;
    uint64_t seed = 0;      // of the initialization
    std::string directory;  // relative to the study directory
    int64_t steps = 0, tokens = 0;
    double final_val_loss = 0, best_val_loss = 0;
    int64_t best_step = 0;
    double final_perplexity = 0, final_bits_per_byte = 0, best_bits_per_byte = 0;
    double train_tokens_per_second = 0, train_ms_per_step = 0;  // medians over the run's steps
    size_t peak_memory_bytes = 0;
    int64_t skipped_steps = 0;
    std::vector<std::pair<int64_t, double>> loss_scale_changes;  // (step, scale from that step on)
    double final_loss_scale = 1;
    StudyBench bench;
    std::vector<StudyEvalPoint> evaluations;
    // The first evaluation whose loss is at most the target, the final validation loss of the
    // study's first variant of the same seed: its step (-1: none) and training seconds (NaN: none).
    int64_t steps_to_target = -1;
    double seconds_to_target = 0;
    StudyTelemetry telemetry;          // the run's measured steps (empty: none)
    TelemetryDepartures departures;    // from the fp32 run of its seed (compare_runs; layer -1: none)
};

// One variant's final validation loss over its seeds.
struct StudySeedSpread {
    StudyVariant variant;
    std::vector<double> final_val_losses;  // one per seed, in StudyReport::seeds' order
    double mean = 0;
    double standard_deviation = 0;  // the sample's (n - 1); 0 with one seed
    double min = 0, max = 0;
};

struct StudyReport {
    std::string dataset, model, arch;
    int n_layer = 0, n_head = 0, n_embd = 0, batch_size = 0, seq_len = 0;
    int64_t steps = 0, tokens_per_run = 0;
    std::vector<uint64_t> seeds;           // of the initialization, one run per variant and seed
    uint64_t data_seed = 0;                // the data order of every run
    double bytes_per_token = 0;            // of the validation split: turns nats into bits per byte
    std::vector<StudyRunSummary> runs;     // variant by variant, each in seeds' order
    std::vector<StudySeedSpread> spreads;  // one per variant, in runs' order
    bool optimizers = false;               // an optimizer study (StudyOptions::optimizers)
};

// Reads one complete run from <study_directory>/<run_directory> (throws Error naming the file
// when its metrics or study_run.json are missing or malformed).
StudyRunSummary summarize_study_run(const std::string& study_directory, const std::string& run_directory,
                                    const StudyVariant& variant, uint64_t seed, double bytes_per_token);
// Fills each run's gap to the fp32 run of its seed, when there is one, its steps and seconds to the
// first variant's final loss of its seed, and each variant's spread over seeds.
void compare_runs(StudyReport& report);

std::string study_report_json(const StudyReport& report);
std::string study_report_markdown(const StudyReport& report);

// study_run.json: what run_study records of a complete run.
std::string study_bench_json(const StudyBench& bench, int64_t steps);
StudyBench read_study_bench(const std::string& path);

}  // namespace mixgpt
