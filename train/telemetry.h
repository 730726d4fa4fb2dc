// train --telemetry-interval N (issue 40): every N steps, where the run's numbers sit, measured on
// the backend with tensor_statistics (kernels/ops.def) and read back in one copy:
// - per parameter tensor: the gradient's norm (unscaled) and the fraction of its elements below
//   the working dtype's smallest normal (zeros and subnormals: what the working precision loses),
//   the weight's norm after the step and the update's norm over it (|W_after - W_before| / |W_after|);
// - per block: its output x_{l+1}'s largest |value| and RMS, and the largest |log-sum-exp| of a
//   query's attention scores (at least its largest score, and at most log(keys) above it);
// - the largest |logit| before the loss (before a soft-cap);
// - fp16: the loss scale's headroom, log2(fp16's largest finite / the largest scaled gradient);
// - per block and for the tensors outside them: the gradients' exponent histogram
//   (exponent_histogram, kernels/ops.h's bins, of the arena's values: loss-scaled under fp16);
//   per block, its output's;
// - fp8: each FP8 tensor's amax, scale and saturated elements in the step (Fp8Linears::step_tensors).
// The activations are the step's last micro-batch's. Nothing is measured in the other steps; a
// measured step runs the same arithmetic (the loss does not move by a bit) and adds a copy of the
// fp32 masters before its update (kept between measured steps: 4 bytes a master kept).
// Under ZeRO-1 (--zero) each rank measures the masters and mean gradients it keeps and the sums
// and counts are added over the ranks (the gradients' amax: their maximum), so that every rank
// must measure the same steps; the activations and fp8's saturation counts are each rank's own.
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

// The backend memory a Telemetry holds: the masters' copy (kept_masters of them; 0: all), its
// statistics and exponent bins, and in fp8 runs the copy of the FP8 state a measured step keeps
// (history_length: its amax history's). Exact without sharding; under ZeRO-1 a view cut by a
// piece's end takes one more slot of 96 bytes than counted.
size_t telemetry_bytes(const GPTConfig& config, Precision precision, int history_length, int64_t kept_masters = 0);

class Telemetry {
public:
    // A part of a view among the masters kept: `count` elements from kept_offset on.
    struct Segment {
        size_t view = 0;
        int64_t kept_offset = 0, count = 0;
    };

    // interval > 0 (Telemetry throws Error otherwise); `communicator` adds the ranks' statistics
    // when the model keeps a shard of the masters.
    Telemetry(GPT& model, Backend& backend, int interval, Communicator& communicator);

    // Whether the step after `steps_done` steps is measured: every interval-th step.
    bool due(int64_t steps_done) const { return (steps_done + 1) % interval_ == 0; }
    // Before a measured step: the masters' copy, and the forward statistics armed.
    void before_step();
    // After it (its update applied): the gradient, weight and update statistics, the forward
    // statistics disarmed, everything read back at once. loss_scale: the one the step's loss used;
    // kept_gradients: the mean gradients of the masters kept, in their order
    // (TrainStep::kept_gradients).
    TelemetryRecord after_step(int64_t steps_done, float loss_scale, const TensorView& kept_gradients);

private:
    TensorStatistics* slot(size_t index) const;

    GPT& model_;
    Backend& backend_;
    Communicator& communicator_;
    int interval_;
    float small_ = 0;                // the working dtype's smallest normal
    std::vector<Segment> segments_;  // the views' parts among the masters kept
    // Backend memory: TensorStatistics for each segment's gradient, weight and update (3 each),
    // each block's output and attention lse (2 per layer), the logits, then the gradients'
    // exponent bins (kExponentBins u64 per layer, and for the tensors outside the blocks) and the
    // block outputs' (per layer), read back in one copy; and the masters' copy.
    Buffer statistics_, masters_before_;
    size_t statistics_count_ = 0;   // TensorStatistics at the front of statistics_
};

}  // namespace mixgpt
