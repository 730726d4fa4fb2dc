// Constructors of the concrete backends, called by make_backend (kernels/backend.cpp).
#pragma once

#include <memory>

#include "kernels/ops.h"

namespace mixgpt {

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);   // kernels/cpu
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);  // kernels/cuda
int cuda_device_count_impl();                                               // kernels/cuda

}  // namespace mixgpt
