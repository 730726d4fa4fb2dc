#include "tests/cuda_sim/launch_checks.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>

#include "tests/cuda_sim/device_limits.h"

namespace mixgpt::cuda_sim {
namespace {

constexpr unsigned kMaxThreadsPerBlock = 1024;

// cudaFuncSetAttribute's dynamic shared memory limits, by kernel.
struct SharedLimits {
    std::mutex mutex;
    std::map<const void*, int> by_kernel;
};

SharedLimits& shared_limits() {
    static SharedLimits limits;
    return limits;
}

}  // namespace

cudaError_t check_configuration(const void* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes) {
    const uint64_t threads = uint64_t{block.x} * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
        grid.z > 65535 || threads == 0 || threads > kMaxThreadsPerBlock || block.z > 64) {
        std::fprintf(stderr, "cuda_sim: invalid launch configuration: grid (%u,%u,%u), block (%u,%u,%u)\n",
                     grid.x, grid.y, grid.z, block.x, block.y, block.z);
        return cudaErrorInvalidConfiguration;
    }
    if (dynamic_shared_bytes > kSharedBytesDefault) {
        const size_t allowed = static_cast<size_t>(max_dynamic_shared_bytes(kernel));
        if (dynamic_shared_bytes > allowed) {
            std::fprintf(
                stderr,
                "cuda_sim: launch asks for %zu bytes of dynamic shared memory; the kernel may use %zu "
                "(cudaFuncSetAttribute raises the limit up to %zu)\n",
                dynamic_shared_bytes, allowed, device_limits().shared_per_block_optin);
            return cudaErrorInvalidValue;
        }
    }
    return cudaSuccess;
}

cudaError_t set_max_dynamic_shared_bytes(const void* kernel, int bytes) {
    if (bytes < 0 || static_cast<size_t>(bytes) > device_limits().shared_per_block_optin)
        return cudaErrorInvalidValue;
    SharedLimits& limits = shared_limits();
    std::lock_guard<std::mutex> lock(limits.mutex);
    limits.by_kernel[kernel] = bytes;
    return cudaSuccess;
}

int max_dynamic_shared_bytes(const void* kernel) {
    SharedLimits& limits = shared_limits();
    std::lock_guard<std::mutex> lock(limits.mutex);
    const auto found = limits.by_kernel.find(kernel);
    return found == limits.by_kernel.end() ? static_cast<int>(kSharedBytesDefault) : found->second;
}

}  // namespace mixgpt::cuda_sim
