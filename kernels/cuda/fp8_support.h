// Whether a CUDA device runs FP8 products: cuBLASLt's FP8 kernels and the cvt instructions to
// E4M3/E5M2 need compute capability 8.9 (Ada) or newer (Hopper 9.0, ...).
#pragma once

#include <string>

namespace mixgpt::cuda {

// Empty when compute capability major.minor runs FP8; else the one-line reason, naming the device
// and its compute capability.
std::string fp8_support_problem(int major, int minor, const std::string& device_name, int device);

// Throws Error with fp8_support_problem's line when device `device` cannot run FP8.
void require_fp8_device(int device);

}  // namespace mixgpt::cuda
