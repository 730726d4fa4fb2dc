// Random device data for the kernel lab, made on the GPU (no host round trip for the
// hundreds of megabytes the timed sets hold).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.h"

namespace mixgpt::lab {

// data (count) of `dtype` = uniform values of mean 0 and standard deviation `std` (plus `offset`),
// a fixed function of (seed, index), rounded to the dtype.
void fill_random(void* data, DType dtype, int64_t count, uint64_t seed, float std, float offset,
                 cudaStream_t stream);

// data (count) int32 = uniform integers in [0, bound).
void fill_indices(int32_t* data, int64_t count, int32_t bound, uint64_t seed, cudaStream_t stream);

}  // namespace mixgpt::lab
