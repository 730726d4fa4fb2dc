// (token, position) pairs sorted by token, stably: CUB's radix sort (on the simulator, its
// stand-in tests/cuda_sim/include/cub/device/device_radix_sort.cuh). Its own translation unit,
// holding no kernel of ours, so that the Makefile can build CUB's kernels with flags of their
// own: CUDA 12's CUB spills registers in an sm_90 kernel, which the spill warning of our kernels
// must not fail on.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace mixgpt::cuda {

// Bytes of temporary device storage that sorting `count` pairs needs.
size_t token_sort_temporary_bytes(int count);

// sorted_tokens, sorted_positions (count) = tokens, positions (count) ordered by token, equal
// tokens in their input order; enqueued on `stream`. temporary: token_sort_temporary_bytes(count).
void sort_tokens_with_positions(void* temporary, size_t temporary_bytes, const int32_t* tokens,
                                int32_t* sorted_tokens, const int32_t* positions, int32_t* sorted_positions,
                                int count, cudaStream_t stream);

}  // namespace mixgpt::cuda
