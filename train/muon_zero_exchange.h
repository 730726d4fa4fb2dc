// The collectives of ZeRO-1 under --optimizer muon (train/muon_zero_layout.h), through one staging
// buffer in backend memory (MuonZeroLayout::staging_elements f32):
// - reduce_gradients: the AdamW elements' gradients packed and reduce-scattered, each rank's block
//   becoming the mean over ranks; each shape's matrices copied into the slots of their chunks and
//   every chunk reduce-scattered, so that each owner gets its matrices' mean gradients (nanochat's
//   DistMuon); then each rank's block and matrices copied back to their places in the gradient
//   arena, where TrainStep takes its pieces from.
// - gather_working: the reverse for the working copy, by all-gathers: every rank's block and
//   matrices, as it updated them in its pieces of the working arena, into every rank's arena.
// Both end with join(): backend work enqueued afterwards runs after the collectives, and on the
// CUDA backend the host does not wait.
#pragma once

#include <cstdint>

#include "core/memory.h"
#include "dist/communicator.h"
#include "kernels/ops.h"
#include "train/muon_zero_layout.h"

namespace mixgpt {

class MuonZeroExchange {
public:
    MuonZeroExchange(Backend& backend, Communicator& communicator, MuonZeroLayout layout);

    const MuonZeroLayout& layout() const { return layout_; }
    void reduce_gradients(const TensorView& gradients);  // (arena) f32
    void gather_working(const TensorView& working);      // (arena) act, or f32

private:
    // The staging buffer as `dtype`: the packed vector (packed_elements), or shape s's slots
    // (chunks * W, rows * cols).
    TensorView packed(DType dtype) const;
    TensorView slots(size_t shape, DType dtype) const;
    // Between the arena and the staging buffer: the packed ranges (or rank's block of them), and
    // shape's matrices (or those rank keeps) in their slots.
    void copy_packed(const TensorView& arena, const TensorView& staged, int rank, bool into_arena);
    void copy_matrices(const TensorView& arena, const TensorView& staged, size_t shape, int rank,
                       bool into_arena);

    Backend& backend_;
    Communicator& communicator_;
    MuonZeroLayout layout_;
    Buffer staging_;
};

}  // namespace mixgpt
