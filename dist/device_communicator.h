// The communicator for device memory, made over a host (MPI) communicator. Defined in
// train/cuda/nccl_communicator.cpp in CUDA builds and train/no_cuda/ elsewhere.
#pragma once

#include <memory>

#include "kernels/ops.h"
#include "dist/communicator.h"

namespace mixgpt {

// NCCL on the CUDA backend's device over the ranks of `host`, its collectives ordered with the
// backend's stream (which outlives the communicator). Throws Error in a build without CUDA, and on
// every rank when two ranks would share one device, naming them and the device.
std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host,
                                                     const Backend& backend, double timeout_seconds);

}  // namespace mixgpt
