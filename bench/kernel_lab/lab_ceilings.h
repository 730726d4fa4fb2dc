// The ceilings every kernel is reported against, measured in the same run: the bandwidth of
// a large device-to-device copy and the throughput of a large cuBLASLt BF16 GEMM.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "bench/kernel_lab/lab_timing.h"
#include "kernels/ops.h"

namespace mixgpt::lab {

struct Ceilings {
    double copy_gb_per_s = 0;     // (bytes read + bytes written) / time of cudaMemcpyAsync device to device
    double gemm_tflop_per_s = 0;  // 2 m n k / time of a bf16 GEMM with fp32 accumulation
};

// cudaMemcpyAsync of `bytes` between two device buffers.
double measure_copy_bandwidth(Backend& gpu, cudaStream_t stream, size_t bytes, const TimingSettings& timing);

// D (n,n) bf16 = A^T B with A, B (n,n) bf16 random, fp32 accumulation, the algorithm cuBLASLt's
// heuristic ranks first.
double measure_gemm_throughput(Backend& gpu, cudaStream_t stream, int n, const TimingSettings& timing);

}  // namespace mixgpt::lab
