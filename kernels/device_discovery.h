// What this process can see of CUDA: whether the build has it, the runtime and driver versions,
// each visible device, or the runtime's own reason there is none. `mixgpt info` prints it and
// `--device auto` decides by it (kernels/device_choice.h). Defined in
// kernels/cuda/device_discovery.cpp in CUDA builds and kernels/no_cuda/ elsewhere.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mixgpt {

struct CudaDeviceInfo {
    int index = 0;
    std::string name;
    int major = 0, minor = 0;  // compute capability
    uint64_t memory_bytes = 0;
    int multiprocessors = 0;
};

struct CudaDiscovery {
    bool built_with_cuda = false;
    int runtime_version = 0;  // the CUDA runtime in this binary, 1000 * major + 10 * minor (13000: 13.0)
    int driver_version = 0;   // the newest CUDA the installed driver supports, same encoding; 0: no driver
    std::vector<CudaDeviceInfo> devices;
    std::string failure;  // why no device is listed (the runtime's reason); empty when some are
};

// cudaError_t values the discovery explains, as the CUDA runtime numbers them (checked against
// its headers in kernels/cuda/device_discovery.cpp), for the seam below.
constexpr int kCudaErrorInsufficientDriver = 35;
constexpr int kCudaErrorDevicesUnavailable = 46;
constexpr int kCudaErrorNoDevice = 100;

// The runtime calls the discovery makes, replaceable by tests to force a failure; an empty
// function means the CUDA runtime's own. Each returns a cudaError_t value.
struct CudaRuntimeQueries {
    std::function<int(int* count)> device_count;      // cudaGetDeviceCount
    std::function<int(int* version)> driver_version;  // cudaDriverGetVersion
};

// Never throws: every failure of the runtime becomes CudaDiscovery::failure.
CudaDiscovery discover_cuda(const CudaRuntimeQueries& queries = {});

// Makes listed device `index` current, which creates its context; returns why it cannot take
// work (busy in exclusive-process mode, prohibited), empty when it can. Call it only for the
// device about to be used.
std::string select_cuda_device(int index);

// "13.0" from 13000 (kernels/device_choice.cpp).
std::string cuda_version_text(int version);

}  // namespace mixgpt
