// Muon's update of the hidden matrices (train/parameter_groups.h), on the backend, without host
// decisions: for each matrix, momentum and Frobenius normalisation into its slot of a batch of the
// matrices of its shape (muon_momentum); the quintic Newton-Schulz iteration once per batch
// (muon_newton_schulz); then each matrix's update and working copy (muon_update). Every op reads
// StepStatus.skip on the backend and does nothing on a skipped step.
//
// The momentum of a matrix is kept, fp32, in the AdamW first-moment arena (TrainStep's m) at the
// matrix's own elements, which AdamW does not touch under Muon: checkpoints and resume carry it as
// they carry m, and a checkpoint without optimizer state (import) starts it at zero.
#pragma once

#include <cstdint>
#include <vector>

#include "core/memory.h"
#include "kernels/ops.h"
#include "train/parameter_groups.h"

namespace mixgpt {

struct MuonHyper {
    float learning_rate = 0.02f;  // this step's (the schedule applies)
    float momentum = 0.95f;       // mu
    bool nesterov = true;
    int ns_steps = 5;
    DType ns_dtype = DType::bf16;  // of the Newton-Schulz iterate: bf16 or f32 (fp32 sums either way)
    float weight_decay = 0.f;      // decoupled: params -= learning_rate * weight_decay * params
    // A bf16 working copy rounded stochastically (--stochastic-rounding), element i of a matrix at
    // offset o of the masters by the hash of (seed mixed with o, i); else to nearest.
    bool stochastic_rounding = false;
    uint64_t seed = 0;  // vary per step
};

class MuonStep {
public:
    MuonStep(Backend& backend, std::vector<MuonMatrix> matrices, DType ns_dtype);

    // masters, gradients, momentum: (n) f32 arenas; working: (n) act, or invalid when the masters
    // are the working copy (fp32 runs). hyper.ns_dtype must be the constructor's.
    void step(const TensorView& masters, const TensorView& gradients, const TensorView& momentum,
              const TensorView& working, const MuonHyper& hyper, StepStatus* status);

    const std::vector<MuonMatrix>& matrices() const { return matrices_; }

private:
    struct ShapeBatch {
        int64_t rows = 0, cols = 0;
        std::vector<size_t> members;  // indices into matrices_
        Buffer iterate;               // (members, rows, cols) ns_dtype
    };

    Backend& backend_;
    std::vector<MuonMatrix> matrices_;
    DType ns_dtype_;
    std::vector<ShapeBatch> batches_;
};

// --optimizer muon: Muon's settings (hyper.learning_rate its peak) and the peak rates of the
// AdamW groups (AdamWRate); the schedule scales them all alike.
struct MuonPlan {
    MuonHyper hyper;
    float base_lr = 6e-4f, embedding_lr = 6e-4f, head_lr = 6e-4f;
};

// Bytes of MuonStep's iterates for a model's hidden matrices (train/parameter_groups.h) in ns_dtype,
// on the rank that keeps the most of them when `owners` ranks share them out under ZeRO-1 (each
// shape's matrices round-robin, train/muon_zero_layout.h; 1: every rank runs every matrix).
size_t muon_iterate_bytes(const GPTConfig& config, DType ns_dtype, int owners = 1);

// max(1, rows / cols)^(1/2): Muon's scale of a matrix's orthogonalised update.
float muon_scale(int64_t rows, int64_t cols);

}  // namespace mixgpt
