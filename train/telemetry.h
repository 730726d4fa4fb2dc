// train --telemetry-interval N (issue 40): every N steps, where the run's numbers sit, measured on
// the backend with tensor_statistics (kernels/ops.def) and read back in one copy:
// - per parameter tensor: the gradient's norm (unscaled) and the fraction of its elements below
//   the working dtype's smallest normal (zeros and subnormals: what the working precision loses),
//   the weight's norm after the step and the update's norm over it (|W_after - W_before| / |W_after|);
// - per block: its output x_{l+1}'s largest |value| and RMS, and the largest |log-sum-exp| of a
//   query's attention scores (at least its largest score, and at most log(keys) above it);
// - the largest |logit| before the loss (before a soft-cap);
// - fp16: the loss scale's headroom, log2(fp16's largest finite / the largest scaled gradient).
// The activations are the step's last micro-batch's. Nothing is measured in the other steps; a
// measured step runs the same arithmetic (the loss does not move by a bit) and adds a copy of the
// fp32 masters before its update (kept between measured steps: 4 bytes a parameter).
// Needs every master on the rank (no --zero).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory.h"
#include "dist/communicator.h"
#include "kernels/ops.h"
#include "model/gpt.h"
#include "train/telemetry_record.h"

namespace mixgpt {

// Of the model's gradients in `owned` (a rank's ranges of the arena), over all ranks: the fraction
// exactly zero (a collective; mixgpt study's grad_zero_fraction), counted on the backend by
// tensor_statistics, one small read per range.
double gradient_zero_fraction(GPT& model, const std::vector<ElementRange>& owned, Communicator& communicator);

class Telemetry {
public:
    // interval > 0; `model` keeps every master (Telemetry throws Error otherwise).
    Telemetry(GPT& model, Backend& backend, int interval);

    // Whether the step after `steps_done` steps is measured: every interval-th step.
    bool due(int64_t steps_done) const { return (steps_done + 1) % interval_ == 0; }
    // Before a measured step: the masters' copy, and the forward statistics armed.
    void before_step();
    // After it (its update applied): the gradient, weight and update statistics, the forward
    // statistics disarmed, everything read back at once. loss_scale: the one the step's loss used.
    TelemetryRecord after_step(int64_t steps_done, float loss_scale);

private:
    TensorStatistics* slot(size_t index) const;

    GPT& model_;
    Backend& backend_;
    int interval_;
    float small_ = 0;         // the working dtype's smallest normal
    size_t tensor_count_ = 0;  // the layout's views
    // Backend memory: TensorStatistics for each tensor's gradient, weight and update (3 per view),
    // each block's output and attention lse (2 per layer), the logits; and the masters' copy.
    Buffer statistics_, masters_before_;
};

}  // namespace mixgpt
