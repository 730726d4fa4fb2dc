#include "bench/kernel_lab/lab_fill.h"
#include "kernels/cuda/common.cuh"

namespace mixgpt::lab {
namespace {

constexpr int kThreads = 256;

// splitmix64 of (seed, index): independent 64-bit values per element.
__device__ __forceinline__ uint64_t mix(uint64_t seed, uint64_t index) {
    uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

template <typename T>
__global__ void fill_random_kernel(T* data, int64_t count, uint64_t seed, float std, float offset) {
    const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const float unit = static_cast<float>(mix(seed, static_cast<uint64_t>(i)) >> 40) * 0x1p-24f;  // [0, 1)
    const float sqrt3 = 1.7320508f;  // uniform on [-sqrt 3, sqrt 3] has variance 1
    data[i] = cuda::from_float<T>(offset + std * sqrt3 * (2.f * unit - 1.f));
}

__global__ void fill_indices_kernel(int32_t* data, int64_t count, int32_t bound, uint64_t seed) {
    const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (i < count)
        data[i] = static_cast<int32_t>(mix(seed, static_cast<uint64_t>(i)) % static_cast<uint64_t>(bound));
}

}  // namespace

void fill_random(void* data, DType dtype, int64_t count, uint64_t seed, float std, float offset,
                 cudaStream_t stream) {
    if (count == 0) return;
    cuda::dispatch_dtype(dtype, [&](auto tag) {
        using T = decltype(tag);
        cuda::launch_kernel(fill_random_kernel<T>, cuda::blocks_for(count, kThreads), kThreads, 0, stream,
                            static_cast<T*>(data), count, seed, std, offset);
    });
}

void fill_indices(int32_t* data, int64_t count, int32_t bound, uint64_t seed, cudaStream_t stream) {
    if (count == 0) return;
    cuda::launch_kernel(fill_indices_kernel, cuda::blocks_for(count, kThreads), kThreads, 0, stream, data,
                        count, bound, seed);
}

}  // namespace mixgpt::lab
