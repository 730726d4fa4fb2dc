// The part of the CUDA runtime API that mixgpt calls, for the simulator: devices with the
// limits of an H100 (sm_90), one unless MIXGPT_CUDA_SIM_DEVICES says more (a process per
// device under mpirun needs as many as it has local ranks), device memory in the host heap, streams and
// events that complete at once (every launch and copy runs when it is issued, in issue order). Device memory
// starts as 0xff bytes, so reading what no kernel wrote gives NaN. Copies and fills check that their device
// side lies inside one allocation and the host side outside all of them.
#include "kernels/cuda_sim/runtime.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "kernels/cuda_sim/block_runner.h"

struct CUstream_st {
    unsigned flags;
};

struct CUevent_st {
    std::chrono::steady_clock::time_point time{};
    bool recorded = false;
};

namespace {

int device_count() {
    static const int count = [] {
        const char* value = std::getenv("MIXGPT_CUDA_SIM_DEVICES");
        const int parsed = value != nullptr ? std::atoi(value) : 1;
        return parsed >= 1 && parsed <= 64 ? parsed : 1;
    }();
    return count;
}
constexpr size_t kDeviceMemoryBytes = size_t{80} << 30;
constexpr int kL2Bytes = 50 << 20;

struct DeviceHeap {
    std::mutex mutex;
    std::map<const unsigned char*, size_t> allocations;  // base -> bytes
    size_t used = 0;
};

DeviceHeap& heap() {
    static auto* instance = new DeviceHeap;  // never destroyed: frees during static destruction find it
    return *instance;
}

cudaError_t fail(cudaError_t status, const char* call, const char* why) {
    std::fprintf(stderr, "cuda_sim: %s: %s\n", call, why);
    mixgpt::cuda_sim::record_error(status);
    return status;
}

}  // namespace

bool mixgpt::cuda_sim::in_device_memory(const void* pointer, size_t bytes) {
    DeviceHeap& h = heap();
    std::lock_guard<std::mutex> lock(h.mutex);
    const auto* begin = static_cast<const unsigned char*>(pointer);
    auto found = h.allocations.upper_bound(begin);
    if (found == h.allocations.begin()) return false;
    --found;
    return begin + bytes <= found->first + found->second;
}

extern "C" {

cudaError_t cudaGetLastError(void) { return mixgpt::cuda_sim::last_error(true); }
cudaError_t cudaPeekAtLastError(void) { return mixgpt::cuda_sim::last_error(false); }

const char* cudaGetErrorString(cudaError_t error) {
    switch (error) {
        case cudaSuccess:
            return "no error (cuda_sim)";
        case cudaErrorInvalidValue:
            return "invalid argument (cuda_sim)";
        case cudaErrorMemoryAllocation:
            return "out of memory (cuda_sim)";
        case cudaErrorInvalidConfiguration:
            return "invalid configuration argument (cuda_sim)";
        case cudaErrorLaunchFailure:
            return "unspecified launch failure (cuda_sim: a kernel fault, described above)";
        case cudaErrorInvalidDevice:
            return "invalid device ordinal (cuda_sim)";
        default:
            return "unknown error (cuda_sim)";
    }
}

cudaError_t cudaGetDeviceCount(int* count) {
    *count = device_count();
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    return device >= 0 && device < device_count()
               ? cudaSuccess
               : fail(cudaErrorInvalidDevice, "cudaSetDevice", "no such device");
}

cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device) {
    if (device < 0 || device >= device_count())
        return fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties", "no such device");
    *properties = cudaDeviceProp{};
    std::snprintf(properties->name, sizeof properties->name, "mixgpt CUDA simulator (sm_90 limits)");
    properties->totalGlobalMem = kDeviceMemoryBytes;
    properties->sharedMemPerBlock = mixgpt::cuda_sim::kSharedBytesDefault;
    properties->sharedMemPerBlockOptin = mixgpt::cuda_sim::kSharedBytesOptin;
    properties->warpSize = 32;
    properties->maxThreadsPerBlock = 1024;
    properties->maxThreadsDim[0] = properties->maxThreadsDim[1] = 1024;
    properties->maxThreadsDim[2] = 64;
    properties->maxGridSize[0] = 0x7fffffff;
    properties->maxGridSize[1] = properties->maxGridSize[2] = 65535;
    properties->major = 9;
    properties->minor = 0;
    properties->multiProcessorCount = 132;
    properties->l2CacheSize = kL2Bytes;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
    if (device < 0 || device >= device_count())
        return fail(cudaErrorInvalidDevice, "cudaDeviceGetAttribute", "no such device");
    switch (attribute) {
        case cudaDevAttrL2CacheSize:
            *value = kL2Bytes;
            return cudaSuccess;
        case cudaDevAttrMultiProcessorCount:
            *value = 132;
            return cudaSuccess;
        default:
            return fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute", "attribute not simulated");
    }
}

cudaError_t cudaDriverGetVersion(int* version) {
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, const void*) {
    *attributes = cudaFuncAttributes{};
    attributes->maxThreadsPerBlock = 1024;
    attributes->ptxVersion = attributes->binaryVersion = 90;
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attribute, int value) {
    if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
    const cudaError_t status = mixgpt::cuda_sim::set_max_dynamic_shared_bytes(kernel, value);
    return status == cudaSuccess
               ? status
               : fail(status, "cudaFuncSetAttribute", "more dynamic shared memory than sm_90 has");
}

cudaError_t cudaMalloc(void** pointer, size_t bytes) {
    DeviceHeap& h = heap();
    std::lock_guard<std::mutex> lock(h.mutex);
    const size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;  // what the device would take
    *pointer = nullptr;
    if (h.used + rounded > kDeviceMemoryBytes)
        return fail(cudaErrorMemoryAllocation, "cudaMalloc", "past the simulated device's 80 GiB");
    // Exactly `bytes`, 256-byte aligned as cudaMalloc's are: AddressSanitizer sees any overrun.
    void* base = nullptr;
    if (posix_memalign(&base, 256, std::max<size_t>(bytes, 1)) != 0)
        return fail(cudaErrorMemoryAllocation, "cudaMalloc", "host allocation failed");
    std::memset(base, 0xff, bytes);
    h.allocations[static_cast<unsigned char*>(base)] = bytes;
    h.used += rounded;
    *pointer = base;
    return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
    if (pointer == nullptr) return cudaSuccess;
    DeviceHeap& h = heap();
    std::lock_guard<std::mutex> lock(h.mutex);
    const auto found = h.allocations.find(static_cast<unsigned char*>(pointer));
    if (found == h.allocations.end())
        return fail(cudaErrorInvalidValue, "cudaFree", "not the start of a device allocation");
    h.used -= (std::max<size_t>(found->second, 1) + 255) / 256 * 256;
    h.allocations.erase(found);
    std::free(pointer);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void** pointer, size_t bytes) {
    *pointer = std::malloc(std::max<size_t>(bytes, 1));
    if (*pointer == nullptr)
        return fail(cudaErrorMemoryAllocation, "cudaMallocHost", "host allocation failed");
    std::memset(*pointer, 0xff, bytes);
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void* pointer) {
    std::free(pointer);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* destination, const void* source, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
    if (bytes == 0) return cudaSuccess;
    const bool device_source = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    const bool device_destination = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    if (kind != cudaMemcpyDefault &&
        (mixgpt::cuda_sim::in_device_memory(source, bytes) != device_source ||
         mixgpt::cuda_sim::in_device_memory(destination, bytes) != device_destination))
        return fail(cudaErrorInvalidValue, "cudaMemcpyAsync",
                    "a pointer is not on the side its cudaMemcpyKind says, or runs past its allocation");
    std::memmove(destination, source, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void* destination, const void* source, size_t bytes, cudaMemcpyKind kind) {
    return cudaMemcpyAsync(destination, source, bytes, kind, nullptr);
}

cudaError_t cudaMemsetAsync(void* pointer, int value, size_t bytes, cudaStream_t) {
    if (bytes == 0) return cudaSuccess;
    if (!mixgpt::cuda_sim::in_device_memory(pointer, bytes))
        return fail(cudaErrorInvalidValue, "cudaMemsetAsync", "not inside one device allocation");
    std::memset(pointer, value, bytes);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
    *stream = new CUstream_st{flags};
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    delete stream;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t* event) {
    *event = new CUevent_st;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) { return cudaEventCreate(event); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    delete event;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
    event->time = std::chrono::steady_clock::now();
    event->recorded = true;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }

cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end) {
    if (!start->recorded || !end->recorded)
        return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime", "an event was never recorded");
    *milliseconds = std::chrono::duration<float, std::milli>(end->time - start->time).count();
    return cudaSuccess;
}

}  // extern "C"
