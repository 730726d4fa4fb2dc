#include "tests/cuda_sim/device_limits.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace mixgpt::cuda_sim {
namespace {

constexpr size_t kKiB = 1024;

constexpr DeviceLimits kSm90{"mixgpt CUDA simulator (sm_90 limits)",
                             9,
                             0,
                             132,
                             228 * kKiB,
                             227 * kKiB,
                             kKiB,
                             128,
                             2048,
                             32,
                             65536,
                             256,
                             50 * kKiB* kKiB};
constexpr DeviceLimits kSm80{"mixgpt CUDA simulator (sm_80 limits)",
                             8,
                             0,
                             108,
                             164 * kKiB,
                             163 * kKiB,
                             kKiB,
                             128,
                             2048,
                             32,
                             65536,
                             256,
                             40 * kKiB* kKiB};

size_t round_up(size_t value, size_t unit) { return (value + unit - 1) / unit * unit; }

}  // namespace

const DeviceLimits& sm80_limits() { return kSm80; }
const DeviceLimits& sm90_limits() { return kSm90; }

const DeviceLimits& device_limits() {
    static const DeviceLimits* const limits = [] {
        const char* arch = std::getenv("MIXGPT_CUDA_SIM_ARCH");
        return arch != nullptr && std::strcmp(arch, "80") == 0 ? &kSm80 : &kSm90;
    }();
    return *limits;
}

int resident_blocks(const DeviceLimits& limits, int threads, int registers, size_t shared_bytes) {
    constexpr int kWarpSize = 32;
    const int warps = (threads + kWarpSize - 1) / kWarpSize;
    if (warps == 0 || shared_bytes > limits.shared_per_block_optin) return 0;
    int blocks = std::min(limits.max_blocks_per_multiprocessor,
                          limits.max_threads_per_multiprocessor / kWarpSize / warps);
    if (registers > 0) {
        const int per_warp = static_cast<int>(round_up(static_cast<size_t>(registers) * kWarpSize,
                                                       static_cast<size_t>(limits.register_granularity)));
        blocks = std::min(blocks, limits.registers_per_multiprocessor / (per_warp * warps));
    }
    const size_t per_block =
        round_up(shared_bytes, limits.shared_granularity) + limits.reserved_shared_per_block;
    return std::min(blocks, static_cast<int>(limits.shared_per_multiprocessor / per_block));
}

}  // namespace mixgpt::cuda_sim
