// Device and pinned host memory as core Buffers. A DeviceAllocator (one per
// backend) counts the device bytes its Buffers hold and remembers the peak; the
// count stays right when Buffers outlive the allocator that made them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>

#include "core/memory.h"

namespace mixgpt::cuda {

struct DeviceMemoryUsage;

class DeviceAllocator {
public:
    explicit DeviceAllocator(cudaStream_t stream);

    // Device memory on the current device, zero-filled by a memset enqueued on the stream;
    // the Buffer frees it with cudaFree. Throws Error naming the size when CUDA is out of memory.
    Buffer allocate(size_t bytes);
    // The most device memory this allocator's Buffers held at one time, in bytes.
    size_t peak_bytes() const;

private:
    cudaStream_t stream_;
    std::shared_ptr<DeviceMemoryUsage> usage_;
};

// Page-locked host memory (cudaMallocHost), zero-filled; freed with cudaFreeHost.
Buffer allocate_pinned(size_t bytes);

}  // namespace mixgpt::cuda
