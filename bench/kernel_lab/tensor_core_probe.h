// The tensor-core probe (`mixgpt_kernel_lab --tensor-core-probe`, the GPU lease's first measuring
// step): runs the device's tensor cores on the distinguishing vectors (tensor_core_vectors.h) and
// on random inputs, and compares every fp32 output bit for bit with the model of that device
// (kernels/tensor_core_model.h), the arithmetic the CUDA simulator computes with:
//   - mma.sync.m16n8k16, bf16 and fp16 inputs, fp32 accumulators: one tile per vector, then
//     random tiles;
//   - cuBLASLt products: bf16 inputs with fp32 output, and on sm_90 FP8 (e4m3 x e4m3, e5m2 x
//     e4m3) with fp32 output, over a K that spans several FP8 promotion intervals.
// Prints one line per product, e.g. "tensor-core model h100 bf16 mma.sync: 4107/4107 tiles
// bit-exact", and appends the inputs of what disagrees to a file.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mixgpt::lab {

struct ProbeLine {
    std::string text;
    bool exact;
};

// The probe on device `device` (the current one, which `stream` belongs to): its lines, in order. `failures_path` (empty: none) receives
// the inputs and both outputs of every tile or product that is not bit-exact.
std::vector<ProbeLine> run_tensor_core_probe(int device, cudaStream_t stream, int random_tiles, uint64_t seed,
                                             const std::string& failures_path);

}  // namespace mixgpt::lab
