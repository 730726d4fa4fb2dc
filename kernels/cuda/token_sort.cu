// The embedding backward's sort of (token, position) pairs: CUB's stable radix sort over all
// 32 bits of the keys (kernels/cuda/token_sort.h).
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/token_sort.h"

namespace mixgpt::cuda {

size_t token_sort_temporary_bytes(int count) {
    size_t bytes = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                               static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                               static_cast<int32_t*>(nullptr), count, 0, 32));
    return bytes;
}

void sort_tokens_with_positions(void* temporary, size_t temporary_bytes, const int32_t* tokens,
                                int32_t* sorted_tokens, const int32_t* positions, int32_t* sorted_positions,
                                int count, cudaStream_t stream) {
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temporary, temporary_bytes, tokens, sorted_tokens, positions,
                                               sorted_positions, count, 0, 32, stream));
    check_launch(stream);
}

}  // namespace mixgpt::cuda
