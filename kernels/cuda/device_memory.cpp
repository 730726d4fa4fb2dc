#include "kernels/cuda/device_memory.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "core/cuda_check.h"
#include "core/log.h"

namespace mixgpt::cuda {

struct DeviceMemoryUsage {
    size_t current = 0;  // guarded by the registry's mutex, as is peak
    size_t peak = 0;
};

namespace {

// Live device allocations: pointer -> (the usage that counts it, bytes). Buffer's deleter is a
// plain function, so this is where it finds what to subtract.
struct AllocationRegistry {
    std::mutex mutex;
    std::unordered_map<void*, std::pair<std::shared_ptr<DeviceMemoryUsage>, size_t>> live;
};

// Never destroyed, so Buffers released during static destruction still find it.
AllocationRegistry& registry() {
    static auto* instance = new AllocationRegistry;
    return *instance;
}

void free_device(void* pointer) {
    AllocationRegistry& r = registry();
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        const auto found = r.live.find(pointer);
        if (found != r.live.end()) {
            found->second.first->current -= found->second.second;
            r.live.erase(found);
        }
    }
    const cudaError_t status = cudaFree(pointer);
    if (status != cudaSuccess && status != cudaErrorCudartUnloading)
        log_warning(std::string("cudaFree failed: ") + cudaGetErrorString(status));
}

void free_pinned(void* pointer) {
    const cudaError_t status = cudaFreeHost(pointer);
    if (status != cudaSuccess && status != cudaErrorCudartUnloading)
        log_warning(std::string("cudaFreeHost failed: ") + cudaGetErrorString(status));
}

}  // namespace

DeviceAllocator::DeviceAllocator(cudaStream_t stream)
    : stream_(stream), usage_(std::make_shared<DeviceMemoryUsage>()) {}

Buffer DeviceAllocator::allocate(size_t bytes) {
    void* pointer = nullptr;
    const cudaError_t status = cudaMalloc(&pointer, std::max<size_t>(bytes, 1));
    if (status != cudaSuccess) {
        cudaGetLastError();  // reset the last error, so the next launch check does not report it
        throw Error(
            format("cannot allocate %zu bytes of device memory: %s", bytes, cudaGetErrorString(status)));
    }
    Buffer buffer(pointer, bytes, MemoryKind::device, &free_device);
    {
        AllocationRegistry& r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        r.live[pointer] = {usage_, bytes};
        usage_->current += bytes;
        usage_->peak = std::max(usage_->peak, usage_->current);
    }
    CUDA_CHECK(cudaMemsetAsync(pointer, 0, bytes, stream_));
    return buffer;
}

size_t DeviceAllocator::peak_bytes() const {
    std::lock_guard<std::mutex> lock(registry().mutex);
    return usage_->peak;
}

Buffer allocate_pinned(size_t bytes) {
    void* pointer = nullptr;
    const cudaError_t status = cudaMallocHost(&pointer, std::max<size_t>(bytes, 1));
    if (status != cudaSuccess) {
        cudaGetLastError();  // as above
        throw Error(
            format("cannot allocate %zu bytes of pinned host memory: %s", bytes, cudaGetErrorString(status)));
    }
    std::memset(pointer, 0, bytes);
    return Buffer(pointer, bytes, MemoryKind::pinned_host, &free_pinned);
}

}  // namespace mixgpt::cuda
