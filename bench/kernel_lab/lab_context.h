// What every section of the kernel lab works with: the CUDA backend, the lab's own stream,
// the cache size the inputs rotate past, the timing settings and the ceilings.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/kernel_lab/lab_ceilings.h"
#include "bench/kernel_lab/lab_timing.h"
#include "kernels/ops.h"

namespace mixgpt::lab {

// The problem sizes of a run. production: the shapes the issue names (GPT-2 124M, B·T = 16K
// tokens) with inputs rotated past the real L2. smoke: small shapes that take every path of the
// lab (validation, rotation, timing, the report) in a minute on the CUDA simulator
// (tests/cuda_sim/); its times and rates mean nothing.
enum class LabSizes { production, smoke };

// The ceilings' problem sizes per LabSizes.
struct CeilingSizes {
    size_t copy_bytes;
    int gemm_size;
};
constexpr CeilingSizes kProductionCeilings{size_t{1} << 30, 8192};
constexpr CeilingSizes kSmokeCeilings{size_t{1} << 20, 256};
// A smoke run rotates its inputs past a nominal 64 KiB, so the rotation runs with several sets
// (production: the device's L2).
constexpr size_t kSmokeCacheBytes = size_t{64} << 10;

struct LabContext {
    explicit LabContext(Backend& cuda_backend) : gpu(cuda_backend) {}

    Backend& gpu;  // the CUDA backend: allocations, and the ops timed through it
    int device = 0;
    Precision precision = Precision::bf16;
    cudaStream_t stream = nullptr;  // the lab's stream: fills, flash kernels, ceilings
    size_t l2_bytes = 0;            // the cache the inputs rotate past (smoke: a nominal small one)
    TimingSettings timing;
    Ceilings ceilings;
    uint64_t seed = 1;
    LabSizes sizes = LabSizes::production;
    std::vector<int> attention_lengths;  // the T of the attention shapes timed; empty: all of them
};

}  // namespace mixgpt::lab
