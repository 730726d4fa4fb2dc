// The CUDA libraries mixgpt loads on first use rather than links (core/cuda_library_search.h):
// cuBLASLt and NCCL. What `mixgpt info` says of each: its version and the file it would load, or
// the one-line reason there is none. Defined in kernels/cuda/{cublaslt,nccl}_library.cpp, by the
// simulator's stand-ins (tests/cuda_sim/) and in kernels/no_cuda/.
#pragma once

#include <string>

namespace mixgpt {

std::string cublaslt_library_status();  // "13.1.0 (/usr/local/cuda-13.0/lib/libcublasLt.so.13)"
std::string nccl_library_status();      // "2.28.9 for CUDA 13.0 (/usr/local/cuda-13.0/lib/libnccl.so.2)"

}  // namespace mixgpt
