// Checkpoint files: the complete state of a training run in one HDF5 file, written atomically.
//
// Layout (HDF5 with a 512-byte user block in front):
//   user block        "mixgpt checkpoint\nversion 1\npayload_bytes N\npayload_crc32 X\n", NUL padded;
//                     N and the CRC-32 cover every byte after the user block, so a truncated or
//                     corrupted file is refused before HDF5 reads any of it
//   /parameters       (n) f32   FP32 master weights, in ParameterLayout order
//   /working          (n) u16   bf16/fp16 bits of the working copy (16-bit runs only)
//   /adam_m, /adam_v  (n) f32   AdamW moments
//   /loader_state     (k) i64   the data loader's state (LoaderState::to_vector)
//   /fp8_scaling      (s) f32   fp8 runs only: every FP8 tensor's scale, scale inverse and amax
//                               history (model/fp8_linears.h, Fp8Linears::flat)
//   /spike_losses, /spike_grad_norms  (w) f64 each, runs with `train --skip-spikes` only: the loss
//                               spike guard's window (train/spike_guard.h), oldest first; its
//                               counts are the attributes spike_skips, spike_skips_in_a_row
//   /options          group whose string attributes are the training options as given
//   attributes of /   arch (the model family, model/family.h; absent: gpt2, as in files written
//                     before families existed), model shape (n_layer, n_head, n_embd, vocab_size,
//                     max_seq_len), the settings the family reads (Family::settings: n_kv_head,
//                     ffn_hidden, norm_epsilon, rope_theta, tie_embeddings for llama), tokenizer_path,
//                     tokenizer_sha256, precision, step, seed, tokens_seen, and the StepStatus fields
//                     (loss_scale, clean_steps, skipped_steps, optimizer_steps)
//
// The header also carries the run id (model/checkpoint_header.h): the lineage of training runs
// the checkpoint belongs to. A run directory keeps checkpoints as <dir>/step_<8 digits>.h5; the
// newest K of its own lineage are kept, and no other file is ever removed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/ops.h"
#include "kernels/precision.h"
#include "model/checkpoint_header.h"
#include "model/config.h"

namespace mixgpt {

// The loss-spike guard's state (train/spike_guard.h): the losses and gradient norms of the last
// applied steps it judges by, oldest first, and the steps it held back, in all and in a row.
struct SpikeGuardState {
    std::vector<double> losses, grad_norms;
    int64_t skips = 0, skips_in_a_row = 0;
};

struct Checkpoint {
    GPTConfig config;
    std::string tokenizer_path;
    std::string tokenizer_sha256;
    Precision precision = Precision::fp32;
    int64_t step = 0;                // optimizer steps completed
    uint64_t seed = 0;               // the run's seed; with `step` it fixes every random number still to come
    int64_t tokens_seen = 0;         // training tokens consumed, all ranks
    int64_t bad_steps_in_a_row = 0;  // consecutive steps with non-finite loss (divergence rule)
    std::vector<float> parameters;   // (n) FP32 masters
    std::vector<uint16_t> working_bits;  // (n) bf16/fp16 working copy; empty for fp32/tf32
    std::vector<float> adam_m, adam_v;   // (n) each; empty when read without optimizer state
    StepStatus status;                   // loss scale and counters (grad_norm_squared, skip: 0)
    std::vector<int64_t> loader_state;
    std::vector<float> fp8_scaling;  // Fp8Linears::flat() of an fp8 run; empty otherwise
    std::optional<SpikeGuardState> spike_guard;  // runs with the guard on only
    std::vector<std::pair<std::string, std::string>> options;
    std::string run_id;  // lineage (header); "" in files written before run ids existed
};

// weights: everything but the optimizer moments and the loader state (for eval and sampling).
enum class CheckpointContent { weights, everything };

// Writes to a temporary file, flushes, checksums and renames into `path`; nothing is left under
// `path` if any step fails.
void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Verifies the header, size and checksum, then reads, all through one open file (so a file removed
// meanwhile is still read whole); throws Error "<path>: <reason>" ("no such checkpoint") on anything
// wrong (truncated, corrupt, missing fields, sizes that do not match the model shape, a negative
// step or counter). Values that are not finite are read as they are: see model/finite_check.h.
Checkpoint read_checkpoint(const std::string& path,
                           CheckpointContent content = CheckpointContent::everything);

// The header, size and checksum only; throws Error "<path>: <reason>". Returns the header.
CheckpointHeader verify_checkpoint_file(const std::string& path);
// The run id in the file's header; "" when it has none or the header cannot be read.
std::string checkpoint_run_id(const std::string& path);
// A new run id: 32 hex digits from the system's random source.
std::string new_run_id();

// Throws Error naming the first field (arch, shape, family setting, tokenizer) in which the
// checkpoint differs from this run, in one line.
void require_compatible(const Checkpoint& checkpoint, const std::string& checkpoint_path,
                        const GPTConfig& config, const std::string& tokenizer_sha256);

std::string checkpoint_path(const std::string& directory, int64_t step);
// Checkpoint files of a run directory, oldest first (by step); none when the directory is missing.
std::vector<std::string> list_checkpoints(const std::string& directory);
// The newest checkpoint that passes verify_checkpoint_file ("" if none); invalid ones are logged.
std::string newest_valid_checkpoint(const std::string& directory);
// Removes the checkpoints of lineage `run_id` in `directory` but the newest `keep` (by step) and
// `protected_path` (the one just written and reported); checkpoints of any other lineage, or of
// none, are never touched. Returns the paths removed.
std::vector<std::string> remove_old_checkpoints(const std::string& directory, int keep,
                                                const std::string& run_id, const std::string& protected_path);

}  // namespace mixgpt
