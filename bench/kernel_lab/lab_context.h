// What every section of the kernel lab works with: the CUDA backend, the lab's own stream,
// the cache size the inputs rotate past, the timing settings and the ceilings.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "bench/kernel_lab/lab_ceilings.h"
#include "bench/kernel_lab/lab_timing.h"
#include "kernels/ops.h"

namespace mixgpt::lab {

struct LabContext {
    Backend& gpu;  // the CUDA backend: allocations, and the ops timed through it
    int device = 0;
    Precision precision = Precision::bf16;
    cudaStream_t stream = nullptr;  // the lab's stream: fills, flash kernels, ceilings
    size_t l2_bytes = 0;
    TimingSettings timing;
    Ceilings ceilings;
    uint64_t seed = 1;
};

}  // namespace mixgpt::lab
