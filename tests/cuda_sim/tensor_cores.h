// The tensor-core arithmetic of the simulated mma.sync and cuBLASLt products: the model of the
// simulated device (kernels/tensor_core_model.h; sm_90: H100, sm_80 with MIXGPT_CUDA_SIM_ARCH=80:
// A100), or exact sums with MIXGPT_CUDA_SIM_TENSOR_CORES=exact in the environment (or
// `set_exact_tensor_cores` from a test). Other values of the variable are refused when first read.
#pragma once

#include "kernels/tensor_core_model.h"

namespace mixgpt::cuda_sim {

// The model a product with inputs `input` computes with now.
const TensorCoreModel& simulated_tensor_cores(TensorCoreInput input);

// Exact sums (true) or the device's model (false) from now on; returns the previous setting.
bool set_exact_tensor_cores(bool exact);

}  // namespace mixgpt::cuda_sim
