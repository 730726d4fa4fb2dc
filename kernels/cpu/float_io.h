// Float access to tensors of any storage dtype. The CPU ops compute in float:
// they read inputs through FloatInput and write outputs through FloatOutput,
// whose store() rounds to the output's dtype (nearest even). That rounding is
// the "storage rounding" that makes bf16/fp16 runs reproducible on a CPU.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "kernels/cpu/scratch_pool.h"

namespace mixgpt::cpu {

// Conversions of `count` elements, parallel over fixed chunks (bit-identical for any thread count).
void parallel_to_float(const void* source, DType source_dtype, float* destination, int64_t count);
void parallel_from_float(const float* source, void* destination, DType destination_dtype, int64_t count);

// The tensor's values as floats: its own memory when it is f32, else a converted copy in scratch.
class FloatInput {
public:
    FloatInput(ScratchPool& scratch, const TensorView& view);
    // `view`'s values, or `count` copies of `fill` when `view` is invalid (the weight 1 and bias 0
    // of a parameter-free norm).
    FloatInput(ScratchPool& scratch, const TensorView& view, int64_t count, float fill);
    FloatInput(const FloatInput&) = delete;
    FloatInput& operator=(const FloatInput&) = delete;
    const float* data() const { return data_; }

private:
    ScratchLease copy_;
    const float* data_;
};

// A float image of an output tensor: its own memory when it is f32, else a scratch
// copy (holding the current values when `load_current`, for "+=" outputs) that
// store() rounds back into the tensor.
class FloatOutput {
public:
    FloatOutput(ScratchPool& scratch, const TensorView& view, bool load_current);
    FloatOutput(const FloatOutput&) = delete;
    FloatOutput& operator=(const FloatOutput&) = delete;
    float* data() { return data_; }
    void store();

private:
    TensorView view_;
    ScratchLease copy_;
    float* data_;
};

// The nearest TF32 value (10 explicit mantissa bits, ties to even); Inf and NaN unchanged.
float round_to_tf32(float value);

}  // namespace mixgpt::cpu
