// `mixgpt info`: what a bug report or a first GPU run needs to know before anything else. This
// binary's version, commit and build options; the CUDA runtime, cuBLASLt and NCCL it runs with
// (the libraries as loaded now, not as built against); each device, or the runtime's reason
// there is none.
#include <dlfcn.h>
#ifdef MIXGPT_WITH_CUDA
#include <cublas_api.h>  // CUBLAS_VER_MAJOR: the cuBLASLt this binary was built against
#endif

#include <iostream>

#include "cli/commands.h"
#include "cli/openmp_waits.h"
#include "core/build_info.h"
#include "core/log.h"
#include "kernels/device_discovery.h"

namespace mixgpt::cli {
namespace {

// "major.minor.patch" of a library loaded into this process, from its version function found at
// run time (so a CPU-only build, or the simulator, which load neither, say so).
template <typename Function>
std::string loaded_library_version(const char* symbol, Function read_code) {
    void* function = dlsym(RTLD_DEFAULT, symbol);
    if (function == nullptr) return "not loaded";
    const long code = read_code(function);
    return format("%ld.%ld.%ld", code / 10000, code / 100 % 100, code % 100);
}

// cuBLASLt is loaded on first use (kernels/cuda/cublaslt_library.cpp), not at start: ask the copy
// the loader would give the backend, or say why there is none.
std::string cublaslt_version() {
#ifdef MIXGPT_WITH_CUDA
    const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return "cannot load " + name + " (" + dlerror() + ")";
    void* function = dlsym(library, "cublasLtGetVersion");
    if (function == nullptr) return name + " has no cublasLtGetVersion";
    const auto code = static_cast<long>(reinterpret_cast<size_t (*)()>(function)());
    return format("%ld.%ld.%ld (%s)", code / 10000, code / 100 % 100, code % 100, name.c_str());
#else
    return "not built";
#endif
}

std::string nccl_version() {
    return loaded_library_version("ncclGetVersion", [](void* function) {
        int code = 0;
        reinterpret_cast<int (*)(int*)>(function)(&code);
        return static_cast<long>(code);
    });
}

std::string info_text() {
    const CudaDiscovery cuda = discover_cuda();
    std::string text = format("mixgpt %s (commit %s)\n", build_version(), build_commit());
    text += format("build: %s, %s\n",
                   cuda.built_with_cuda ? ("CUDA (GPU_ARCHS " + std::string(build_gpu_archs()) + ")").c_str()
                                        : "CPU only (no CUDA toolkit)",
                   build_options());
    text += "OpenMP waits: " + openmp_waits_description() + "\n";
    if (cuda.built_with_cuda) {
        text += "CUDA runtime: " + cuda_version_text(cuda.runtime_version) + "\n";
        text += "cuBLASLt: " + cublaslt_version() + "\n";
        text += "NCCL: " + nccl_version() + "\n";
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
        "version, commit and build options; CUDA runtime, cuBLASLt and NCCL versions; each CUDA "
        "device, or why there is none");
    command->callback([] { std::cout << info_text(); });
}

}  // namespace mixgpt::cli
