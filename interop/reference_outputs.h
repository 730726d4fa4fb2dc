// mixgpt's own outputs for a checkpoint, written as plain files so that a program without mixgpt
// (scripts/hf_transformers_check.py, with transformers) can compare an export against them:
//
//   reference.json        {"seq_len", "vocab_size", "eot_id", "split", "logits_windows", "prompt",
//                          "prompt_ids", "greedy_ids", "precision": "fp32", "device": "cpu"}
//   val_tokens.i32        (N) int32 LE: the dataset split's tokens (mixgpt's tokenizer ids)
//   val_doc_offsets.i64   (D+1) int64 LE: document d is tokens [off[d], off[d+1]), end of text included
//   logits.f32            (W, T, V) float32 LE: the logits of windows w = tokens [w T, w T + T) for
//                         the first W = ceil(logits_tokens / T) windows, real vocabulary columns only
//
// Computed on the CPU backend in FP32 (the reference backend) from the FP32 masters, and the
// greedy continuation (argmax, up to new_tokens tokens, stopping after end of text) by mixgpt's
// generation with its KV cache.
#pragma once

#include <string>

namespace mixgpt::interop {

struct ReferenceOptions {
    std::string source;   // a checkpoint file or a run directory
    std::string output;   // the folder to write (replaced)
    std::string dataset;  // "": the one the checkpoint was trained on
    std::string split = "val";
    int logits_tokens = 1000;
    std::string prompt = "And God said";
    int new_tokens = 50;
    int threads = 0;
    bool force = false;         // replace an existing non-empty output folder (export's --force)
    std::string export_output;  // the export folder written with it: never replaced by this one
};

void write_reference_outputs(const ReferenceOptions& options);

}  // namespace mixgpt::interop
