// What built this binary, from the header the Makefile writes (build/generated/build_stamp.h):
// mixgpt's version, `git describe --always --dirty` of the source tree ("unknown" outside a git
// checkout), the GPU architectures compiled and the build options; and the CUDA toolkit the
// binary was built with, with the oldest NVIDIA driver that runs it.
#pragma once

#include <string>

namespace mixgpt {

const char* build_version();
const char* build_commit();
const char* build_gpu_archs();  // GPU_ARCHS, e.g. "80 90"
const char* build_options();    // e.g. "release (-O3), g++ 12.2.0"

// CUDART_VERSION of the toolkit this binary was built with (13000: CUDA 13.0); 0 in a CPU-only
// build. The runtime is linked statically, so it is also the runtime the binary runs with.
int build_cuda_version();

// The oldest Linux NVIDIA driver that runs a binary built with CUDA `cuda_version` (minor-version
// compatibility within a CUDA major): "580" for 13.x, "525.60.13" for 12.x; "" when unknown.
std::string minimum_linux_driver(int cuda_version);

}  // namespace mixgpt
