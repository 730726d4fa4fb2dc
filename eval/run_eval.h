// `mixgpt eval` as a library call: a checkpoint's loss, perplexity and bits per byte on a dataset
// split or on raw text, with non-overlapping windows (the default, the same windows and batches
// as the trainer's evaluation) or sliding windows with a stride.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/checkpoint_model.h"
#include "eval/loss_totals.h"

namespace mixgpt {

struct EvalOptions {
    std::string checkpoint;  // a file or a run directory
    std::string dataset;     // "": the dataset the checkpoint was trained on
    std::string split = "val";
    std::vector<std::string> text_inputs;  // raw text instead (files, directories, globs; .jsonl, .gz)
    std::string tokenizer;                 // "": the checkpoint's tokenizer
    int batch_size = 0;                    // 0: the training run's batch size
    int seq_len = 0;                       // 0: the model's context (max_seq_len)
    int stride = 0;                        // 0: seq_len, non-overlapping windows
    int64_t max_tokens = 0;                // evaluate a prefix of this many tokens; 0: everything
    DeviceOptions device;
    bool allow_nonfinite = false;  // use weights that are NaN or Inf anyway (model/finite_check.h)
    bool verify_data = false;      // every shard's SHA-256 checked at open, not each at its first read
};

struct EvalReport {
    std::string checkpoint;
    int64_t step = 0;    // the checkpoint's training step
    std::string source;  // "dataset <path> split <name>" or "text <inputs>"
    int seq_len = 0, stride = 0, batch_size = 0;
    LossTotals totals;
    double bytes_per_token = 0;  // of the source: its text bytes / its tokens
    double mean_loss = 0, perplexity = 0, bits_per_byte = 0;
};

EvalReport run_evaluation(const EvalOptions& options);

std::string eval_report_json(const EvalReport& report);  // one JSON object
std::string eval_report_text(const EvalReport& report);  // a few lines for people

}  // namespace mixgpt
