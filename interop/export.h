// `mixgpt export`: a checkpoint as a Hugging Face GPT2LMHeadModel folder.
//
//   config.json, generation_config.json   interop/hf_config.h
//   model.safetensors                      GPT-2 names and layouts (interop/gpt2_layout.h), from the FP32
//                                          master weights, stored as fp32, or rounded to bf16 / fp16
//   tokenizer.model, tokenizer_config.json, special_tokens_map.json   interop/hf_tokenizer.h
//   README.md                              the model card (interop/model_card.h)
//
// The folder is written under a temporary name and renamed when complete; SIGINT/SIGTERM stop the
// export at its next step with the temporary removed. Weights that are not finite are refused
// (model/finite_check.h) unless allow_nonfinite.
#pragma once

#include <cstdint>
#include <string>

namespace mixgpt::interop {

struct ExportOptions {
    std::string source;            // a checkpoint file or a run directory (its newest valid checkpoint)
    std::string output;            // the folder to write
    std::string dtype = "fp32";    // fp32, bf16 or fp16
    std::string tokenizer;         // "": the checkpoint's tokenizer (its SHA-256 must match either way)
    bool force = false;            // replace an existing non-empty output folder (never an input, a file,
                                   // or a run directory in use: interop/staging_directory.h)
    bool allow_nonfinite = false;  // export weights that are NaN or Inf anyway
};

struct ExportResult {
    std::string checkpoint;  // the file exported
    int64_t step = 0;
    int tensors = 0;
    uint64_t safetensors_bytes = 0;
    // The run's --attention-mask document separator (-1: causal): a training choice no exported
    // class represents, left out of the export (the exported model attends across documents).
    int32_t document_separator = -1;
    // --positions document: positions restarted at each document, which an exported model given
    // one document at a time (from position 0) sees anyway.
    bool document_positions = false;
};

ExportResult export_hf(const ExportOptions& options);

// safetensors metadata keys written by export and read back by import.
inline constexpr const char* kMetadataStep = "mixgpt_step";
inline constexpr const char* kMetadataTokensSeen = "mixgpt_tokens_seen";
inline constexpr const char* kMetadataPrecision = "mixgpt_precision";
inline constexpr const char* kMetadataDataset = "mixgpt_dataset";
inline constexpr const char* kMetadataBatchSize = "mixgpt_batch_size";

}  // namespace mixgpt::interop
