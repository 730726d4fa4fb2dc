// Device discovery through the CUDA runtime (kernels/device_discovery.h): the runtime's own
// error, explained, when it lists no device.
#include "kernels/device_discovery.h"

#include <cuda_runtime.h>

#include <cstdlib>

#include "core/log.h"

namespace mixgpt {
namespace {

static_assert(kCudaErrorInsufficientDriver == cudaErrorInsufficientDriver);
static_assert(kCudaErrorDevicesUnavailable == cudaErrorDevicesUnavailable);
static_assert(kCudaErrorNoDevice == cudaErrorNoDevice);

std::string runtime_error_text(int error) {
    return format("%s (cudaError %d)", cudaGetErrorString(static_cast<cudaError_t>(error)), error);
}

std::string visible_devices_hint() {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return visible != nullptr ? format("CUDA_VISIBLE_DEVICES='%s'", visible) : "CUDA_VISIBLE_DEVICES";
}

// Why cudaGetDeviceCount failed, in the terms a person can act on.
std::string explain_count_failure(int error, const CudaDiscovery& found) {
    const std::string runtime = cuda_version_text(found.runtime_version);
    switch (error) {
        case kCudaErrorInsufficientDriver:
            if (found.driver_version == 0)
                return "no NVIDIA driver is installed (libcuda.so.1 not found), and the CUDA " + runtime +
                       " runtime this mixgpt was built with needs one (cudaErrorInsufficientDriver)";
            return "the NVIDIA driver supports CUDA " + cuda_version_text(found.driver_version) +
                   ", older than the CUDA " + runtime +
                   " runtime this mixgpt was built with: update the driver (cudaErrorInsufficientDriver)";
        case kCudaErrorNoDevice:
            return "the NVIDIA driver (CUDA " + cuda_version_text(found.driver_version) +
                   ") sees no CUDA device (cudaErrorNoDevice; check " + visible_devices_hint() +
                   " and nvidia-smi)";
        case kCudaErrorDevicesUnavailable:
            return "every CUDA device is busy or prohibited (cudaErrorDevicesUnavailable: compute mode "
                   "exclusive-process with another process on it, or prohibited; see nvidia-smi -q -d "
                   "COMPUTE)";
        default:
            return "cudaGetDeviceCount failed: " + runtime_error_text(error);
    }
}

}  // namespace

CudaDiscovery discover_cuda(const CudaRuntimeQueries& queries) {
    CudaDiscovery found;
    found.built_with_cuda = true;
    cudaRuntimeGetVersion(&found.runtime_version);
    const int driver_error = queries.driver_version ? queries.driver_version(&found.driver_version)
                                                    : cudaDriverGetVersion(&found.driver_version);
    if (driver_error != cudaSuccess) found.driver_version = 0;
    int count = 0;
    const int count_error = queries.device_count ? queries.device_count(&count) : cudaGetDeviceCount(&count);
    if (count_error != cudaSuccess) {
        cudaGetLastError();  // a failed discovery is an answer, not a pending error
        found.failure = explain_count_failure(count_error, found);
        return found;
    }
    if (count == 0) found.failure = "the CUDA runtime lists no device";
    for (int index = 0; index < count; ++index) {
        cudaDeviceProp properties{};
        const cudaError_t error = cudaGetDeviceProperties(&properties, index);
        if (error != cudaSuccess) {
            cudaGetLastError();
            found.devices.clear();
            found.failure =
                format("cudaGetDeviceProperties(%d) failed: %s", index, runtime_error_text(error).c_str());
            return found;
        }
        found.devices.push_back({index, properties.name, properties.major, properties.minor,
                                 properties.totalGlobalMem, properties.multiProcessorCount});
    }
    return found;
}

std::string select_cuda_device(int index) {
    const cudaError_t error = cudaSetDevice(index);
    if (error == cudaSuccess) return "";
    cudaGetLastError();
    if (error == cudaErrorDevicesUnavailable)
        return format(
            "cuda:%d is busy or prohibited (cudaErrorDevicesUnavailable: compute mode "
            "exclusive-process with another process on it, or prohibited; see nvidia-smi -q -d "
            "COMPUTE)",
            index);
    return format("cuda:%d: cudaSetDevice failed: %s", index, runtime_error_text(error).c_str());
}

}  // namespace mixgpt
