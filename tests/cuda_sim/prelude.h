// Force-included (g++ -include) before every kernels/cuda/*.cu of the simulator build, which
// compiles them as C++: the CUDA headers for the types, then what nvcc would otherwise provide
// (device_functions.h), and the kernels' own GPU-only primitives for the CPU (device_primitives.h,
// in place of kernels/cuda/device_primitives.cuh).
// __shared__ variables become function-local statics, one per kernel, which is right because
// the simulator runs one block at a time. They all live in one section, mixgpt_sim_shared,
// which the simulator poisons before every block (block_runner.cpp), as it does dynamic shared
// memory: a block that reads what it has not written sees NaN, not the previous block's data.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "tests/cuda_sim/block_runner.h"
#include "tests/cuda_sim/device_functions.h"
#include "tests/cuda_sim/device_primitives.h"

#undef __shared__
#define __shared__ static __attribute__((section("mixgpt_sim_shared")))
#undef __launch_bounds__
#define __launch_bounds__(...)

#define threadIdx (::mixgpt::cuda_sim::position().thread)
#define blockIdx (::mixgpt::cuda_sim::position().block)
#define blockDim (::mixgpt::cuda_sim::position().block_dim)
#define gridDim (::mixgpt::cuda_sim::position().grid_dim)

using std::max;
using std::min;

// The runtime's overloads for kernel pointers, which cuda_runtime.h declares for nvcc only.
template <typename Kernel>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, Kernel* kernel) {
    return cudaFuncGetAttributes(attributes, reinterpret_cast<const void*>(kernel));
}
template <typename Kernel>
cudaError_t cudaFuncSetAttribute(Kernel* kernel, cudaFuncAttribute attribute, int value) {
    return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attribute, value);
}
