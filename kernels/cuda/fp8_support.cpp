#include "kernels/cuda/fp8_support.h"

#include <cuda_runtime.h>

#include "core/cuda_check.h"
#include "core/error.h"

namespace mixgpt::cuda {

std::string fp8_support_problem(int major, int minor, const std::string& device_name, int device) {
    if (major * 10 + minor >= 89) return "";
    return "fp8 needs a GPU of compute capability 8.9 or newer (Ada, Hopper): device " +
           std::to_string(device) + " (" + device_name + ") has " + std::to_string(major) + "." +
           std::to_string(minor);
}

void require_fp8_device(int device) {
    cudaDeviceProp properties{};
    CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    const std::string problem =
        fp8_support_problem(properties.major, properties.minor, properties.name, device);
    MIXGPT_REQUIRE(problem.empty(), problem);
}

}  // namespace mixgpt::cuda
