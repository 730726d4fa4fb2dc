// The limits of the simulated GPU, from the CUDA C++ Programming Guide's table of technical
// specifications per compute capability: sm_90 (H100 SXM) unless MIXGPT_CUDA_SIM_ARCH=80 in the
// environment selects sm_80 (A100). Launches are checked against them, cudaGetDeviceProperties
// reports them, and the occupancy API answers from them.
#pragma once

#include <cstddef>

namespace mixgpt::cuda_sim {

struct DeviceLimits {
    const char* name;
    int major, minor;
    int multiprocessors;
    size_t shared_per_multiprocessor;  // sm_90: 228 KiB, sm_80: 164 KiB
    size_t shared_per_block_optin;     // what a block may opt into: 227 KiB, 163 KiB
    size_t reserved_shared_per_block;  // 1 KiB per resident block, the system's
    size_t shared_granularity;         // a block's shared memory is allocated in 128-byte units
    int max_threads_per_multiprocessor;
    int max_blocks_per_multiprocessor;
    int registers_per_multiprocessor;
    int register_granularity;  // registers are allocated per warp in units of 256
    size_t l2_bytes;
};

// The simulated device's limits (the environment's choice), and those of sm_80 and sm_90.
const DeviceLimits& device_limits();
const DeviceLimits& sm80_limits();
const DeviceLimits& sm90_limits();

// Resident blocks of `threads` threads, `registers` registers each (0: unknown, not counted)
// and `shared_bytes` of shared memory (static + dynamic) that one multiprocessor holds: the
// fewest that threads (warps), blocks, registers and shared memory allow, as
// cudaOccupancyMaxActiveBlocksPerMultiprocessor computes it.
int resident_blocks(const DeviceLimits& limits, int threads, int registers, size_t shared_bytes);

}  // namespace mixgpt::cuda_sim
