// What the simulated CUDA runtime (runtime.cpp) tells the simulator's other parts.
#pragma once

#include <cstddef>

namespace mixgpt::cuda_sim {

// Whether [pointer, pointer + bytes) lies inside one live cudaMalloc allocation.
bool in_device_memory(const void* pointer, size_t bytes);

}  // namespace mixgpt::cuda_sim
