// The launches a GPU refuses, refused the same way: grid or block out of range, or more dynamic
// shared memory than the kernel may use (48 KiB, or what cudaFuncSetAttribute allowed, up to the
// device's opt-in limit: device_limits.h).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace mixgpt::cuda_sim {

// cudaSuccess, or the error a GPU gives a launch of this configuration (printed to stderr).
cudaError_t check_configuration(const void* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes);

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), up to the
// device's opt-in limit.
cudaError_t set_max_dynamic_shared_bytes(const void* kernel, int bytes);

// The dynamic shared memory the kernel may use: cudaFuncSetAttribute's, or 48 KiB.
int max_dynamic_shared_bytes(const void* kernel);

// Shared memory a block may use without opt-in (with it: device_limits.h).
constexpr size_t kSharedBytesDefault = 48 * 1024;

}  // namespace mixgpt::cuda_sim
