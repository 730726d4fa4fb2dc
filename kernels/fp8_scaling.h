// Per-tensor FP8 scaling: the state a run keeps for each tensor it quantizes, and its update, with
// Transformer Engine's conventions (transformer_engine/common/recipe/delayed_scaling.cu and
// recipe_common.cuh, read 2026-11; TE's defaults: history 1024, "max", margin 0).
//
// A tensor x is stored as codes q = FP8(fl(x · scale)) and stands for q · scale_inverse
// (scale_inverse = fl(1 / scale), what cuBLASLt's A/B scale pointers take). The scale comes from
// an amax (a max |x|):
//   scale = fl(scaled_max / amax), scaled_max = fp8_max(format) · 2^-margin (exact), when amax is
//   finite and > 0; when that overflows fp32 (amax tiny), FLT_MAX.
// Delayed scaling (TE's DelayedScaling): each tensor's quantizations record their amax of x in
// slot 0 of its history (a running max, so several quantizations in one step, micro-batches of
// gradient accumulation, record their max); once per step `update_delayed` takes
//   amax = max of the whole history ("max"; NaN entries ignored, as CUDA's fmaxf does, and 0 if
//          all are) or slot 0 alone ("most_recent", NaN kept),
// computes the scale for the next step from it, or keeps the previous scale when that amax is 0,
// infinite or NaN, then shifts the history by one (slot i+1 = old slot i, the oldest dropped)
// and zeroes slot 0. (TE keeps the same window as a rotation; a shift keeps "i steps ago" at
// slot i. TE's bulk update skips the roll for a tensor whose slot 0 is 0; this one always rolls.)
// Current scaling (TE's Float8CurrentScaling): the tensor's own amax just before it is quantized;
// amax 0, infinite or NaN gives scale 1. TE has no margin there; here it takes the config's
// margin (0, TE's, by default).
// Saturation: each tensor counts the elements whose |fl(x · scale)| exceeded fp8_max, which the
// conversion clipped (core/fp8.h); the counts are metrics, reset by whoever reports them.
//
// kernels/cuda/fp8_scaling.h updates the same state on the device, bit for bit, without a host
// synchronisation. One state holds the tensors of one FP8 format (TE's forward and backward
// FP8TensorMeta: E4M3 for inputs and weights, E5M2 or E4M3 for gradients).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/fp8.h"

namespace mixgpt {

enum class Fp8Scaling : uint8_t { delayed, current };
enum class AmaxCompute : uint8_t { max, most_recent };

const char* fp8_scaling_name(Fp8Scaling scaling);         // "delayed", "current"
Fp8Scaling parse_fp8_scaling(const std::string& name);    // throws Error
const char* amax_compute_name(AmaxCompute compute);       // "max", "most_recent"
AmaxCompute parse_amax_compute(const std::string& name);  // throws Error

struct Fp8ScalingConfig {
    Fp8Scaling scaling = Fp8Scaling::delayed;
    int history_length = 1024;  // 1 .. kMaxAmaxHistory
    AmaxCompute amax_compute = AmaxCompute::max;
    int margin = 0;  // 0 .. kMaxMargin
};

constexpr int kMaxAmaxHistory = 8192;  // the device update holds a history in shared memory
constexpr int kMaxMargin = 64;

// Throws Error naming the field when a config is out of range.
void check_fp8_scaling_config(const Fp8ScalingConfig& config);

// fp8_max(format) · 2^-margin.
float fp8_scaled_max(Fp8Format format, int margin);

// The scale for `amax` as above: scaled_max / amax, FLT_MAX when that overflows, and `fallback`
// when amax is 0, infinite or NaN (delayed scaling passes the previous scale, current scaling 1).
float fp8_scale_from_amax(float amax, float scaled_max, float fallback);

class Fp8ScalingState {
public:
    // `tensors` tensors of `format`, scales 1, histories zero, counts zero.
    Fp8ScalingState(int tensors, Fp8Format format, const Fp8ScalingConfig& config);

    int tensors() const { return tensors_; }
    Fp8Format format() const { return format_; }
    const Fp8ScalingConfig& config() const { return config_; }

    float scale(int tensor) const { return values_[static_cast<size_t>(tensor)]; }
    float scale_inverse(int tensor) const { return values_[static_cast<size_t>(tensors_ + tensor)]; }
    // Slot `steps_ago` of a tensor's history (0: the step being recorded).
    float amax_history(int tensor, int steps_ago) const;
    uint64_t saturated(int tensor) const { return saturated_[static_cast<size_t>(tensor)]; }

    // What one quantization of tensor `tensor` saw: slot 0 = max(slot 0, amax), the count added.
    void record(int tensor, const Fp8QuantizeStats& stats);
    // Delayed scaling, once per step: every tensor's scale from its history, then the shift.
    void update_delayed();
    // Current scaling, before quantizing `tensor`: its scale from `amax`, its own amax.
    void update_current(int tensor, float amax);
    void reset_saturated();

    // The state as the checkpoint keeps it, and as the device holds it (kernels/cuda/fp8_scaling.h):
    //   [scale (T) | scale_inverse (T) | amax_history (T, history_length)], T = tensors().
    // The saturation counts are not part of it (metrics of the current interval).
    const std::vector<float>& flat() const { return values_; }
    static size_t flat_size(int tensors, int history_length);
    // Replaces the state by `values` (the flat form); throws Error when its size is not flat_size
    // or a scale is not finite and positive.
    void load_flat(const std::vector<float>& values);

private:
    float* history(int tensor) {
        return &values_[static_cast<size_t>(2 * tensors_ + tensor * config_.history_length)];
    }

    int tensors_;
    Fp8Format format_;
    Fp8ScalingConfig config_;
    float scaled_max_;
    std::vector<float> values_;
    std::vector<uint64_t> saturated_;
};

}  // namespace mixgpt
