// A trained model ready for inference: a checkpoint's weights on a fresh backend. Shared by
// `mixgpt eval`, `mixgpt sample` and the exports (the tokenizer that goes with it:
// eval/checkpoint_tokenizer.h).
#pragma once

#include <memory>
#include <string>

#include "kernels/ops.h"
#include "model/checkpoint.h"
#include "model/gpt.h"

namespace mixgpt {

struct DeviceOptions {
    std::string device = "cpu";
    int device_index = 0;
    int threads = 0;
    std::string precision;  // "": the precision the checkpoint was trained in
};

struct CheckpointModel {
    std::string path;       // the checkpoint file
    Checkpoint checkpoint;  // weights and metadata (no optimizer state)
    std::unique_ptr<Backend> backend;
    std::unique_ptr<GPT> model;

    // Reads the checkpoint: a file, or a run directory's newest that can be read, in checkpoints/
    // or the directory itself (model/newest_checkpoint.h); no backend yet. Weights that are
    // not finite are refused (model/finite_check.h) unless allow_nonfinite.
    static CheckpointModel read(const std::string& file_or_directory, bool allow_nonfinite = false);
    // Makes the backend and a GPT for batches up to (batch_size, seq_len) holding the weights;
    // seq_len 0 means the model's max_seq_len. The working copy is the checkpoint's own when it
    // was saved in this precision, so evaluation sees exactly the weights training saw.
    void instantiate(const DeviceOptions& device, int batch_size, int seq_len);
};

// The training option `name` recorded in the checkpoint ("" if absent).
std::string checkpoint_option(const Checkpoint& checkpoint, const std::string& name);

}  // namespace mixgpt
