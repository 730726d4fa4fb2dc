#include "bench/kernel_lab/tensor_core_probe_mma.h"
#include "kernels/cuda/common.cuh"

namespace mixgpt::lab {
namespace {

__device__ __forceinline__ uint32_t pair(uint16_t low, uint16_t high) {
    return uint32_t{low} | uint32_t{high} << 16;
}

// Lane l = 4g + t holds the fragments mma.sync's PTX definition gives it (tests/cuda_sim/warp_matrix.h).
template <typename T>
__global__ void probe_mma_kernel(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
    const int lane = static_cast<int>(threadIdx.x), g = lane / 4, t = lane % 4;
    const uint16_t* ta = a + blockIdx.x * 256;
    const uint16_t* tb = b + blockIdx.x * 128;
    const float* tc = c + blockIdx.x * 128;
    float* td = d + blockIdx.x * 128;
    const uint32_t fragment_a[4] = {pair(ta[g * 16 + 2 * t], ta[g * 16 + 2 * t + 1]),
                                    pair(ta[(g + 8) * 16 + 2 * t], ta[(g + 8) * 16 + 2 * t + 1]),
                                    pair(ta[g * 16 + 2 * t + 8], ta[g * 16 + 2 * t + 9]),
                                    pair(ta[(g + 8) * 16 + 2 * t + 8], ta[(g + 8) * 16 + 2 * t + 9])};
    const uint32_t b0 = pair(tb[2 * t * 8 + g], tb[(2 * t + 1) * 8 + g]);
    const uint32_t b1 = pair(tb[(2 * t + 8) * 8 + g], tb[(2 * t + 9) * 8 + g]);
    const int rows[4] = {g, g, g + 8, g + 8}, columns[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    float accumulators[4];
    for (int i = 0; i < 4; ++i) accumulators[i] = tc[rows[i] * 8 + columns[i]];
    cuda::mma_16x8x16<T>(accumulators, fragment_a, b0, b1);
    for (int i = 0; i < 4; ++i) td[rows[i] * 8 + columns[i]] = accumulators[i];
}

}  // namespace

void run_probe_mma(bool bf16, const uint16_t* a, const uint16_t* b, const float* c, float* d, int tiles,
                   cudaStream_t stream) {
    if (bf16)
        cuda::launch_kernel(probe_mma_kernel<__nv_bfloat16>, tiles, cuda::kWarpSize, 0, stream, a, b, c, d);
    else
        cuda::launch_kernel(probe_mma_kernel<__half>, tiles, cuda::kWarpSize, 0, stream, a, b, c, d);
}

}  // namespace mixgpt::lab
