// The device a command runs on: --device auto|cpu|cuda decided against what device discovery
// found (kernels/device_discovery.h), so that a machine with a usable GPU never trains on the CPU
// unless asked to, and one without says why it does.
#pragma once

#include <functional>
#include <string>

#include "kernels/device_discovery.h"

namespace mixgpt {

struct DeviceChoice {
    std::string device;  // "cpu" or "cuda"
    std::string reason;  // why, for the log line
};

// "cpu" and "cuda" stay as asked. "auto" is cuda when discovery lists devices and device `index`
// (when listed) takes work, as `select` (select_cuda_device) reports; else cpu, the reason being
// the runtime's. Throws Error for any other name.
DeviceChoice choose_device(const std::string& requested, int index, const CudaDiscovery& discovery,
                           const std::function<std::string(int)>& select = select_cuda_device);

// "cpu" and "cuda" as they are; "auto" decided by choose_device against discover_cuda(), and
// logged as one line ("device: cpu (auto: no usable CUDA device: ...)"). Returns "cpu" or "cuda".
std::string resolve_device(const std::string& requested, int index);

}  // namespace mixgpt
