// The part of the CUDA runtime API that mixgpt calls, for the simulator: devices with the
// limits of an H100 (sm_90) or, with MIXGPT_CUDA_SIM_ARCH=80, an A100 (device_limits.h), one unless
// MIXGPT_CUDA_SIM_DEVICES says more (a process per device under mpirun needs as many as it has local ranks),
// device memory in the host heap, streams whose work runs lazily (runtime.h) and events that mark a place in
// a stream. Device memory starts as 0xff bytes, so reading what no kernel wrote gives NaN. Copies and fills
// check that their device side lies inside one allocation and the host side outside all.
// Copies follow CUDA's rules for host memory: a pageable source is read when the copy is
// issued, a pageable destination is written before it returns (the stream's earlier work run
// first); pinned memory (cudaMallocHost) is read and written when the stream gets there.
#include "tests/cuda_sim/runtime.h"

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "tests/cuda_sim/block_runner.h"
#include "tests/cuda_sim/device_limits.h"
#include "tests/cuda_sim/function_names.h"
#include "tests/cuda_sim/launch_checks.h"

struct CUstream_st {
    std::deque<std::function<void()>> pending;
    uint64_t enqueued = 0;  // work items ever enqueued
    uint64_t done = 0;      // work items run
};

struct CUevent_st {
    CUstream_st* stream = nullptr;  // where it was last recorded
    uint64_t position = 0;          // the stream's work before it
    // When the stream got there; shared with the queued work, which may outlive the event.
    std::shared_ptr<std::chrono::steady_clock::time_point> time =
        std::make_shared<std::chrono::steady_clock::time_point>();
    bool recorded = false;
};

namespace {

// The error of the last failed launch or runtime call of this host thread, which cudaGetLastError
// returns and resets; record_error sets it (cudaSuccess leaves it).
thread_local cudaError_t t_last_error = cudaSuccess;

void record_error(cudaError_t status) {
    if (status != cudaSuccess) t_last_error = status;
}

cudaError_t take_last_error() {
    const cudaError_t status = t_last_error;
    t_last_error = cudaSuccess;
    return status;
}

struct AtomicCounters {
    std::atomic<uint64_t> device_allocations{0}, device_frees{0}, kernel_launches{0}, compute_runs{0},
        computations_run{0}, matmuls{0}, matmul_plans{0};
    std::atomic<bool> compute_wait_since_enqueue{true};
};

AtomicCounters& totals() {
    static AtomicCounters instance;
    return instance;
}

int device_count() {
    static const int count = [] {
        const char* value = std::getenv("MIXGPT_CUDA_SIM_DEVICES");
        const int parsed = value != nullptr ? std::atoi(value) : 1;
        return parsed >= 1 && parsed <= 64 ? parsed : 1;
    }();
    return count;
}
constexpr size_t kDeviceMemoryBytes = size_t{80} << 30;

struct DeviceHeap {
    std::mutex mutex;
    std::map<const unsigned char*, size_t> allocations;  // base -> bytes
    std::map<const unsigned char*, size_t> pinned;       // cudaMallocHost: base -> bytes
    size_t used = 0;
};

DeviceHeap& heap() {
    static auto* instance = new DeviceHeap;  // never destroyed: frees during static destruction find it
    return *instance;
}

bool inside(const std::map<const unsigned char*, size_t>& ranges, const void* pointer, size_t bytes) {
    const auto* begin = static_cast<const unsigned char*>(pointer);
    auto found = ranges.upper_bound(begin);
    if (found == ranges.begin()) return false;
    --found;
    return begin + bytes <= found->first + found->second;
}

bool is_pinned(const void* pointer, size_t bytes) {
    DeviceHeap& h = heap();
    std::lock_guard<std::mutex> lock(h.mutex);
    return inside(h.pinned, pointer, bytes);
}

// ---- lazy streams ----

struct StreamSet {
    std::recursive_mutex mutex;  // held while work runs: work may drain other streams
    CUstream_st legacy_default;
    std::set<CUstream_st*> live{&legacy_default};
    cudaError_t async_error = cudaSuccess;  // a fault of work run lazily, for the next sync to return
};

StreamSet& streams() {
    static auto* instance = new StreamSet;
    return *instance;
}

CUstream_st& stream_of(cudaStream_t stream) { return stream != nullptr ? *stream : streams().legacy_default; }

// Runs the stream's work up to `position` (work items since its creation).
void drain(CUstream_st& stream, uint64_t position) {
    std::lock_guard<std::recursive_mutex> lock(streams().mutex);
    while (stream.done < position) {
        std::function<void()> work = std::move(stream.pending.front());
        stream.pending.pop_front();
        work();
        ++stream.done;
    }
}

void drain_all() {
    std::lock_guard<std::recursive_mutex> lock(streams().mutex);
    for (CUstream_st* stream : streams().live) drain(*stream, stream->enqueued);
}

// Runs `wait`, a call's blocking part. If computations ran for it, the host waited for them:
// the current run of computations ends (RuntimeCounters::compute_runs).
template <typename Wait>
void host_wait(Wait&& wait) {
    const uint64_t computations_before = totals().computations_run;
    wait();
    if (totals().computations_run != computations_before) totals().compute_wait_since_enqueue = true;
}

cudaError_t take_async_error() {
    std::lock_guard<std::recursive_mutex> lock(streams().mutex);
    const cudaError_t status = streams().async_error;
    streams().async_error = cudaSuccess;
    record_error(status);
    return status;
}

cudaError_t fail(cudaError_t status, const char* call, const char* why) {
    std::fprintf(stderr, "cuda_sim: %s: %s\n", call, why);
    record_error(status);
    return status;
}

}  // namespace

mixgpt::cuda_sim::RuntimeCounters mixgpt::cuda_sim::runtime_counters() {
    const AtomicCounters& c = totals();
    return {c.device_allocations, c.device_frees, c.kernel_launches,
            c.compute_runs,       c.matmuls,      c.matmul_plans};
}

void mixgpt::cuda_sim::count_matmul() { ++totals().matmuls; }

void mixgpt::cuda_sim::count_matmul_plan() { ++totals().matmul_plans; }

bool mixgpt::cuda_sim::in_device_memory(const void* pointer, size_t bytes) {
    DeviceHeap& h = heap();
    std::lock_guard<std::mutex> lock(h.mutex);
    return inside(h.allocations, pointer, bytes);
}

void mixgpt::cuda_sim::enqueue(cudaStream_t stream, std::function<void()> work) {
    std::lock_guard<std::recursive_mutex> lock(streams().mutex);
    CUstream_st& s = stream_of(stream);
    s.pending.push_back(std::move(work));
    ++s.enqueued;
}

void mixgpt::cuda_sim::enqueue_compute(cudaStream_t stream, std::function<void()> work) {
    if (totals().compute_wait_since_enqueue.exchange(false)) ++totals().compute_runs;
    enqueue(stream, [work = std::move(work)] {
        ++totals().computations_run;
        work();
    });
}

cudaError_t mixgpt::cuda_sim::enqueue_launch(cudaStream_t stream, const void* kernel, dim3 grid, dim3 block,
                                             size_t dynamic_shared_bytes, std::function<void()> body) {
    const cudaError_t status = check_configuration(kernel, grid, block, dynamic_shared_bytes);
    if (status != cudaSuccess) {
        record_error(status);
        return status;
    }
    ++totals().kernel_launches;
    enqueue_compute(stream, [=] {
        const cudaError_t ran = launch(kernel, grid, block, dynamic_shared_bytes, body);
        if (ran != cudaSuccess && streams().async_error == cudaSuccess) streams().async_error = ran;
    });
    return cudaSuccess;
}

extern "C" {

cudaError_t cudaGetLastError(void) { return take_last_error(); }

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

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device) {
    if (device < 0 || device >= device_count())
        return fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties", "no such device");
    *properties = cudaDeviceProp{};
    const mixgpt::cuda_sim::DeviceLimits& limits = mixgpt::cuda_sim::device_limits();
    std::snprintf(properties->name, sizeof properties->name, "%s", limits.name);
    properties->totalGlobalMem = kDeviceMemoryBytes;
    properties->sharedMemPerBlock = mixgpt::cuda_sim::kSharedBytesDefault;
    properties->sharedMemPerBlockOptin = limits.shared_per_block_optin;
    properties->sharedMemPerMultiprocessor = limits.shared_per_multiprocessor;
    properties->reservedSharedMemPerBlock = limits.reserved_shared_per_block;
    properties->regsPerMultiprocessor = limits.registers_per_multiprocessor;
    properties->maxThreadsPerMultiProcessor = limits.max_threads_per_multiprocessor;
    properties->maxBlocksPerMultiProcessor = limits.max_blocks_per_multiprocessor;
    properties->warpSize = 32;
    properties->maxThreadsPerBlock = 1024;
    properties->maxThreadsDim[0] = properties->maxThreadsDim[1] = 1024;
    properties->maxThreadsDim[2] = 64;
    properties->maxGridSize[0] = 0x7fffffff;
    properties->maxGridSize[1] = properties->maxGridSize[2] = 65535;
    properties->major = limits.major;
    properties->minor = limits.minor;
    properties->multiProcessorCount = limits.multiprocessors;
    properties->l2CacheSize = static_cast<int>(limits.l2_bytes);
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
    if (device < 0 || device >= device_count())
        return fail(cudaErrorInvalidDevice, "cudaDeviceGetAttribute", "no such device");
    switch (attribute) {
        case cudaDevAttrL2CacheSize:
            *value = static_cast<int>(mixgpt::cuda_sim::device_limits().l2_bytes);
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

// What the simulator knows of a kernel: not its registers (numRegs 0) nor its static shared
// memory (sharedSizeBytes 0; mixgpt's kernels hold at most a few hundred bytes there), which
// only ptxas knows; its dynamic shared memory limit is cudaFuncSetAttribute's.
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, const void* kernel) {
    *attributes = cudaFuncAttributes{};
    attributes->maxThreadsPerBlock = 1024;
    attributes->maxDynamicSharedSizeBytes = mixgpt::cuda_sim::max_dynamic_shared_bytes(kernel);
    const mixgpt::cuda_sim::DeviceLimits& limits = mixgpt::cuda_sim::device_limits();
    attributes->ptxVersion = attributes->binaryVersion = 10 * limits.major + limits.minor;
    return cudaSuccess;
}

cudaError_t cudaFuncGetName(const char** name, const void* kernel) {
    *name = mixgpt::cuda_sim::function_name(kernel);
    return *name != nullptr ? cudaSuccess
                            : fail(cudaErrorInvalidDeviceFunction, "cudaFuncGetName", "not a function");
}

// From the device's limits, the launch's threads and dynamic shared memory; registers unknown.
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void*, int threads,
                                                          size_t dynamic_shared_bytes) {
    *blocks = mixgpt::cuda_sim::resident_blocks(mixgpt::cuda_sim::device_limits(), threads, 0,
                                                dynamic_shared_bytes);
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
    ++totals().device_allocations;
    *pointer = base;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
    DeviceHeap& h = heap();
    std::lock_guard<std::mutex> lock(h.mutex);
    *free_bytes = kDeviceMemoryBytes - h.used;
    *total_bytes = kDeviceMemoryBytes;
    return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
    if (pointer == nullptr) return cudaSuccess;
    host_wait([] { drain_all(); });  // cudaFree waits for the device
    DeviceHeap& h = heap();
    std::lock_guard<std::mutex> lock(h.mutex);
    const auto found = h.allocations.find(static_cast<unsigned char*>(pointer));
    if (found == h.allocations.end())
        return fail(cudaErrorInvalidValue, "cudaFree", "not the start of a device allocation");
    h.used -= (std::max<size_t>(found->second, 1) + 255) / 256 * 256;
    h.allocations.erase(found);
    ++totals().device_frees;
    std::free(pointer);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void** pointer, size_t bytes) {
    *pointer = std::malloc(std::max<size_t>(bytes, 1));
    if (*pointer == nullptr)
        return fail(cudaErrorMemoryAllocation, "cudaMallocHost", "host allocation failed");
    std::memset(*pointer, 0xff, bytes);
    DeviceHeap& h = heap();
    std::lock_guard<std::mutex> lock(h.mutex);
    h.pinned[static_cast<unsigned char*>(*pointer)] = bytes;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void* pointer) {
    if (pointer == nullptr) return cudaSuccess;
    host_wait([] { drain_all(); });  // cudaFreeHost waits for the device
    {
        DeviceHeap& h = heap();
        std::lock_guard<std::mutex> lock(h.mutex);
        h.pinned.erase(static_cast<unsigned char*>(pointer));
    }
    std::free(pointer);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* destination, const void* source, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
    if (bytes == 0) return cudaSuccess;
    const bool device_source = mixgpt::cuda_sim::in_device_memory(source, bytes);
    const bool device_destination = mixgpt::cuda_sim::in_device_memory(destination, bytes);
    const bool kind_source = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    const bool kind_destination = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    if (kind != cudaMemcpyDefault && (device_source != kind_source || device_destination != kind_destination))
        return fail(cudaErrorInvalidValue, "cudaMemcpyAsync",
                    "a pointer is not on the side its cudaMemcpyKind says, or runs past its allocation");
    if (!device_destination && !is_pinned(destination, bytes)) {  // pageable: done before returning
        CUstream_st& s = stream_of(stream);
        host_wait([&] { drain(s, s.enqueued); });
        std::memmove(destination, source, bytes);
        return take_async_error();
    }
    if (!device_source && !is_pinned(source, bytes)) {  // pageable: read now
        auto snapshot = std::make_shared<std::vector<unsigned char>>(
            static_cast<const unsigned char*>(source), static_cast<const unsigned char*>(source) + bytes);
        mixgpt::cuda_sim::enqueue(stream, [=] { std::memcpy(destination, snapshot->data(), bytes); });
        return cudaSuccess;
    }
    mixgpt::cuda_sim::enqueue(stream, [=] { std::memmove(destination, source, bytes); });
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void* destination, const void* source, size_t bytes, cudaMemcpyKind kind) {
    const cudaError_t status = cudaMemcpyAsync(destination, source, bytes, kind, nullptr);
    if (status != cudaSuccess) return status;
    CUstream_st& s = stream_of(nullptr);
    host_wait([&] { drain(s, s.enqueued); });
    return take_async_error();
}

cudaError_t cudaMemsetAsync(void* pointer, int value, size_t bytes, cudaStream_t stream) {
    if (bytes == 0) return cudaSuccess;
    if (!mixgpt::cuda_sim::in_device_memory(pointer, bytes))
        return fail(cudaErrorInvalidValue, "cudaMemsetAsync", "not inside one device allocation");
    mixgpt::cuda_sim::enqueue(stream, [=] { std::memset(pointer, value, bytes); });
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
    std::lock_guard<std::recursive_mutex> lock(streams().mutex);
    *stream = new CUstream_st;
    streams().live.insert(*stream);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    std::lock_guard<std::recursive_mutex> lock(streams().mutex);
    drain(*stream, stream->enqueued);  // its work still completes
    streams().live.erase(stream);
    delete stream;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    CUstream_st& s = stream_of(stream);
    host_wait([&] { drain(s, s.enqueued); });
    return take_async_error();
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
    std::lock_guard<std::recursive_mutex> lock(streams().mutex);
    if (!event->recorded) return cudaSuccess;  // waiting for an event never recorded waits for nothing
    CUstream_st* source = event->stream;
    const uint64_t position = event->position;
    mixgpt::cuda_sim::enqueue(stream, [source, position] {
        if (streams().live.count(source) > 0)
            drain(*source, position);  // a destroyed stream ran all its work
    });
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
    *event = new CUevent_st;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) { return cudaEventCreate(event); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    delete event;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    std::lock_guard<std::recursive_mutex> lock(streams().mutex);
    mixgpt::cuda_sim::enqueue(stream, [time = event->time] { *time = std::chrono::steady_clock::now(); });
    event->stream = &stream_of(stream);
    event->position = event->stream->enqueued;
    event->recorded = true;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    host_wait([&] {
        if (event->recorded) drain(*event->stream, event->position);
    });
    return take_async_error();
}

cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end) {
    if (!start->recorded || !end->recorded)
        return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime", "an event was never recorded");
    *milliseconds = std::chrono::duration<float, std::milli>(*end->time - *start->time).count();
    return cudaSuccess;
}

}  // extern "C"
