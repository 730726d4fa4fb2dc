// Occupancy of every kernel the lab launched, from the CUDA runtime: cudaFuncGetAttributes
// (registers, static shared memory) and cudaOccupancyMaxActiveBlocksPerMultiprocessor for the
// launch's threads and dynamic shared memory. On the CUDA simulator the answers come from the
// sm_90 limits (sm_80 with MIXGPT_CUDA_SIM_ARCH=80), without registers or static shared memory,
// which only ptxas knows (tests/cuda_sim/device_limits.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/cuda/launch_recorder.h"

namespace mixgpt::lab {

struct KernelOccupancy {
    std::string kernel;  // e.g. "forward_kernel<__nv_bfloat16, 128>"
    int threads = 0;     // per block
    int registers = 0;   // per thread; 0 when unknown (the simulator)
    size_t static_shared_bytes = 0;
    size_t dynamic_shared_bytes = 0;
    int blocks_per_multiprocessor = 0;
    int warps_per_multiprocessor = 0;
};

std::vector<KernelOccupancy> occupancy_of(const std::vector<cuda::KernelLaunch>& launches);

// "layernorm_backward_kernel<float, 4>" for a kernel's (mangled or plain) name.
std::string readable_kernel_name(const char* name);

}  // namespace mixgpt::lab
