// The FP8 side of a model run under Precision::fp8: which linear layers multiply in FP8, and the
// per-tensor scaling state of every FP8 operand, held in backend memory (kernels/fp8_scaling.h).
//
// Each linear layer (a block's QKV, attention output, MLP input (SwiGLU's stacked gate/up) and
// MLP output products; the output head with `head`) has three tensor roles: its input and weight
// (the forward format, E4M3) and the gradient of its output (the backward format: E5M2 in the
// "hybrid" format, E4M3 under "e4m3"). The forward state holds 2 tensors per linear layer
// (input at 2i, weight at 2i + 1), the backward state 1 (gradient at i), i = 4 · layer + role,
// the head at i = 4 · n_layer: one scale and amax history per tensor role per layer, as
// Transformer Engine keeps them (its forward and backward FP8TensorMeta).
// Blocks named by bf16_layers multiply in bf16 and leave their slots unused.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/memory.h"
#include "kernels/ops.h"

namespace mixgpt {

struct Fp8Options {
    std::string format = "hybrid";  // hybrid: E4M3 forward, E5M2 gradients; e4m3: E4M3 throughout
    Fp8ScalingConfig scaling;       // delayed (history 1024, max, margin 0) by default
    std::string bf16_layers;        // "first", "last" and block indices, comma-separated; "" none
    bool head = false;              // the output head in FP8 too
};

// Throws Error naming the option when an option is out of range (format, scaling, and the layers
// when n_layer > 0).
void check_fp8_options(const Fp8Options& options, int n_layer);
// The blocks `text` names ("first,last,3"): a flag per block; throws Error on anything else.
std::vector<bool> parse_bf16_layers(const std::string& text, int n_layer);

enum class LinearRole { qkv, attention_output, mlp_input, mlp_output, head };

// The saturation counts since the last reset, summed over the linear layers per tensor class.
struct Fp8Saturation {
    uint64_t inputs = 0, weights = 0, gradients = 0;
};

// One FP8 tensor in one optimizer step, for telemetry (train/telemetry.h).
struct Fp8StepTensor {
    int layer = -1;                 // the block; -1: the head
    std::string role;               // "qkv", "attention_output", "mlp_input", "mlp_output", "head"
    std::string kind;               // "input", "weight", "gradient"
    double amax = 0;                // delayed: the step's amax (its quantizations', max over the ranks);
                                    // current: the last quantization's, as scaled_max / scale
    double scale = 0;               // the scale the step's quantizations used (current: the last's)
    uint64_t saturated = 0;         // elements the step's quantizations clipped, on this rank, each
                                    // quantization counted (a weight: the forward's and the input gradient's)
    double fp8_max = 0;             // the format's largest finite value
};

class Fp8Linears {
public:
    Fp8Linears(Backend& backend, const Fp8Options& options, int n_layer);

    const Fp8Options& options() const { return options_; }
    // Whether the product of `role` in block `layer` (the head: any layer) runs in FP8.
    bool in_fp8(int layer, LinearRole role) const;
    Fp8TensorScaling input(int layer, LinearRole role) const {
        return slot(forward_, 2 * index(layer, role));
    }
    Fp8TensorScaling weight(int layer, LinearRole role) const {
        return slot(forward_, 2 * index(layer, role) + 1);
    }
    Fp8TensorScaling gradient(int layer, LinearRole role) const {
        return slot(backward_, index(layer, role));
    }

    // Delayed scaling's amax histories (forward, backward: each (tensors * history) f32, backend
    // memory); none under current scaling. Data parallelism reduces them to their maximum over
    // the ranks before each update, so that every rank holds the same scales.
    std::vector<TensorView> amax_histories() const;
    // Once per optimizer step, after it: delayed scaling's update (nothing under current scaling).
    void step_done();
    // Telemetry: the next step_done first keeps a copy of the state as the step left it, before
    // its update (the scales it used, its amaxes still in the newest history slot, its saturation
    // counts; the copy's memory is kept for the next measured step), which step_tensors reads (a
    // host synchronisation), one entry per tensor that multiplies in FP8; empty before any.
    void keep_next_step() { keep_next_step_ = true; }
    std::vector<Fp8StepTensor> step_tensors() const;

    // A copy of the whole state (scales, histories, saturation counts) in backend memory. An
    // evaluation between training steps quantizes with the training's scales but records amaxes
    // and saturations like any forward pass: restoring the copy after it keeps the evaluation out
    // of the next update, so that evaluating does not change the run.
    struct Snapshot {
        Buffer forward_values, forward_saturated, backward_values, backward_saturated;
    };
    Snapshot snapshot() const;
    void restore(const Snapshot& snapshot);
    // The state as it stands into `kept`, a snapshot of this state's sizes.
    void copy_into(const Snapshot& kept) const;

    // The two states' flat forms (forward, then backward), copied from and to backend memory, for
    // checkpoints. load_flat throws Error on a size or value the state cannot hold.
    std::vector<float> flat() const;
    void load_flat(const std::vector<float>& values);
    // Reads the saturation counts (a host synchronisation), then zeroes them.
    Fp8Saturation take_saturation();

private:
    struct State {
        Buffer values;     // the flat form (f32)
        Buffer saturated;  // (tensors) u64
        int tensors = 0;
        Fp8Format format = Fp8Format::e4m3;
    };
    int index(int layer, LinearRole role) const;
    // Each state buffer beside its copy in `snapshot`: (live, copy).
    std::array<std::pair<const Buffer*, const Buffer*>, 4> paired_buffers(const Snapshot& snapshot) const;
    Fp8TensorScaling slot(const State& state, int tensor) const;
    State make_state(int tensors, Fp8Format format);

    Backend& backend_;
    Fp8Options options_;
    int n_layer_;
    std::vector<bool> bf16_blocks_;
    State forward_, backward_;
    bool keep_next_step_ = false;
    std::optional<Snapshot> kept_step_;
};

}  // namespace mixgpt
