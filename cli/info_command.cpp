// `mixgpt info`: what a bug report or a first GPU run needs to know before anything else. This
// binary's version, commit and build options; the CUDA toolkit it was built with and the oldest
// driver that runs it; the cuBLASLt and NCCL it would load (found at run time, not linked:
// kernels/cuda_libraries.h) or why there is none; each device, or the runtime's reason there is
// none.
#include <iostream>

#include "cli/commands.h"
#include "cli/openmp_waits.h"
#include "core/build_info.h"
#include "core/log.h"
#include "kernels/cuda_libraries.h"
#include "kernels/device_discovery.h"

namespace mixgpt::cli {
namespace {

std::string info_text() {
    const CudaDiscovery cuda = discover_cuda();
    std::string text = format("mixgpt %s (commit %s)\n", build_version(), build_commit());
    text += format("build: %s, %s\n",
                   cuda.built_with_cuda ? ("CUDA (GPU_ARCHS " + std::string(build_gpu_archs()) + ")").c_str()
                                        : "CPU only (no CUDA toolkit)",
                   build_options());
    text += "OpenMP waits: " + openmp_waits_description() + "\n";
    if (cuda.built_with_cuda) {
        const int built = build_cuda_version();
        const std::string driver = minimum_linux_driver(built);
        text += "CUDA toolkit: built with " + cuda_version_text(built) +
                " (runtime linked statically), needs " +
                (driver.empty() ? "a driver for it" : "an NVIDIA driver >= " + driver + " on Linux") + "\n";
        text += "cuBLASLt: " + cublaslt_library_status() + "\n";
        text += "NCCL: " + nccl_library_status() + "\n";
        text +=
            "driver: " +
            (cuda.driver_version > 0 ? "supports CUDA " + cuda_version_text(cuda.driver_version) : "none") +
            "\n";
    }
    if (cuda.devices.empty()) text += "devices: none: " + cuda.failure + "\n";
    for (const CudaDeviceInfo& device : cuda.devices)
        text += format("cuda:%d: %s, compute capability %d.%d, %.1f GiB, %d multiprocessors\n", device.index,
                       device.name.c_str(), device.major, device.minor,
                       static_cast<double>(device.memory_bytes) / (1u << 30), device.multiprocessors);
    return text;
}

}  // namespace

void add_info_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand(
        "info",
        "version, commit and build options; the CUDA toolkit built with and the driver it needs; the "
        "cuBLASLt and NCCL found; each CUDA device, or why there is none");
    command->callback([] { std::cout << info_text(); });
}

}  // namespace mixgpt::cli
