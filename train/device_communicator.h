// The communicator for device memory, made over a host (MPI) communicator. Defined in
// train/cuda/nccl_communicator.cpp in CUDA builds and train/no_cuda/ elsewhere.
#pragma once

#include <memory>

#include "train/communicator.h"

namespace mixgpt {

// NCCL on the current CUDA device over the ranks of `host`, its collectives ordered with the
// backend's stream compute_stream (a cudaStream_t); throws Error in a build without CUDA.
std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host, void* compute_stream,
                                                     double timeout_seconds);

}  // namespace mixgpt
