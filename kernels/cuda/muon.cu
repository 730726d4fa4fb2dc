// Muon's ops (kernels/ops.def) are not yet on the CUDA backend (#37: the Newton-Schulz products
// through cuBLASLt, batched over matrices of one shape, come next). `train --optimizer muon`
// refuses a CUDA device before any of these runs; they throw if called all the same.
#include "core/error.h"
#include "kernels/cuda/cuda_backend.h"

namespace mixgpt::cuda {
namespace {

[[noreturn]] void not_yet(const char* op) {
    throw Error(std::string("cuda ") + op +
                ": not yet on the CUDA backend (#37); Muon runs on the CPU backend");
}

}  // namespace

void CudaBackend::muon_momentum(TensorView, TensorView, TensorView, float, bool, const StepStatus*) {
    not_yet("muon_momentum");
}

void CudaBackend::muon_newton_schulz(TensorView, int, const StepStatus*) { not_yet("muon_newton_schulz"); }

void CudaBackend::muon_update(TensorView, TensorView, TensorView, float, float, float, const StepStatus*) {
    not_yet("muon_update");
}

}  // namespace mixgpt::cuda
