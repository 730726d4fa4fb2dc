// The FP8 scaling state of kernels/fp8_scaling.h held and updated on the device: the same flat
// array in device memory, the same updates, bit for bit, enqueued on a stream so that a training
// step never waits for its scales on the host. The quantization kernels (fp8_cast.h) read
// `scale(t)` and record into `amax_slot(t)` and `saturated + t`.
#pragma once

#include <cuda_runtime.h>

#include "core/fp8.h"
#include "kernels/fp8_scaling.h"

namespace mixgpt::cuda {

struct Fp8ScalingDevice {
    float* values = nullptr;  // device, Fp8ScalingState::flat() (copied there whole, read back whole)
    unsigned long long* saturated = nullptr;  // device, (tensors); may be null
    int tensors = 0;
    Fp8Format format = Fp8Format::e4m3;
    Fp8ScalingConfig config;

    const float* scale(int t) const { return values + t; }
    const float* scale_inverse(int t) const { return values + tensors + t; }
    float* amax_slot(int t) const { return values + 2 * tensors + t * config.history_length; }
};

// Fp8ScalingState::update_delayed for every tensor: one block per tensor.
void fp8_update_delayed(const Fp8ScalingDevice& state, cudaStream_t stream);

// Current scaling of `tensor`: its scale from amax_slot(tensor), where fp8_amax has just recorded
// the tensor's amax (Fp8ScalingState::update_current), then the slot is zeroed for the next one.
void fp8_update_current(const Fp8ScalingDevice& state, int tensor, cudaStream_t stream);

}  // namespace mixgpt::cuda
