#include "kernels/device_choice.h"

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {

std::string cuda_version_text(int version) { return format("%d.%d", version / 1000, version % 1000 / 10); }

DeviceChoice choose_device(const std::string& requested, int index, const CudaDiscovery& discovery,
                           const std::function<std::string(int)>& select) {
    if (requested == "cpu" || requested == "cuda") return {requested, "--device " + requested};
    MIXGPT_REQUIRE(requested == "auto", "device: '" + requested + "' is not auto, cpu or cuda");
    if (discovery.devices.empty()) return {"cpu", "auto: no usable CUDA device: " + discovery.failure};
    if (index >= 0 && index < static_cast<int>(discovery.devices.size())) {
        const std::string refusal = select(index);
        if (!refusal.empty()) return {"cpu", "auto: no usable CUDA device: " + refusal};
        const CudaDeviceInfo& device = discovery.devices[static_cast<size_t>(index)];
        return {"cuda", format("auto: cuda:%d is %s, compute capability %d.%d", index, device.name.c_str(),
                               device.major, device.minor)};
    }
    return {"cuda", format("auto: %zu CUDA devices visible", discovery.devices.size())};
}

std::string resolve_device(const std::string& requested, int index) {
    if (requested != "auto") return choose_device(requested, index, {}).device;
    const DeviceChoice choice = choose_device(requested, index, discover_cuda());
    log_info("device: " + choice.device + " (" + choice.reason + ")");
    return choice.device;
}

}  // namespace mixgpt
