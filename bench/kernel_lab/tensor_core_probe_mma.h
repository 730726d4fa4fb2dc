// The tensor-core probe's kernel: mma.sync.m16n8k16 with fp32 accumulators, one warp per tile.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace mixgpt::lab {

// Per tile t: d[t] (16x8, row-major) = a[t] (16x16, row-major) · b[t] (16x8, b[k * 8 + n]) + c[t]
// (16x8, row-major), inputs as bf16 (`bf16`) or fp16 bits. Device pointers.
void run_probe_mma(bool bf16, const uint16_t* a, const uint16_t* b, const float* c, float* d, int tiles,
                   cudaStream_t stream);

}  // namespace mixgpt::lab
