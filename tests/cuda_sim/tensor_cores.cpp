#include "tests/cuda_sim/tensor_cores.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/cuda_sim/device_limits.h"

namespace mixgpt::cuda_sim {
namespace {

constexpr TensorCoreInput kInputs[] = {TensorCoreInput::bf16, TensorCoreInput::fp16, TensorCoreInput::tf32,
                                       TensorCoreInput::e4m3, TensorCoreInput::e5m2};
constexpr int kInputCount = sizeof kInputs / sizeof kInputs[0];

bool exact_from_environment() {
    const char* value = std::getenv("MIXGPT_CUDA_SIM_TENSOR_CORES");
    if (value == nullptr || std::strcmp(value, "device") == 0) return false;
    if (std::strcmp(value, "exact") == 0) return true;
    std::fprintf(stderr, "cuda_sim: MIXGPT_CUDA_SIM_TENSOR_CORES=%s: expected 'device' or 'exact'\n", value);
    std::exit(2);
}

struct Models {
    TensorCoreModel device[kInputCount], exact[kInputCount];
    bool use_exact = exact_from_environment();

    Models() {
        const DeviceLimits& limits = device_limits();
        const int sm = limits.major * 10 + limits.minor;
        for (int i = 0; i < kInputCount; ++i) {
            const bool fp8 = kInputs[i] == TensorCoreInput::e4m3 || kInputs[i] == TensorCoreInput::e5m2;
            // No FP8 tensor cores before sm_89: the simulated cuBLASLt refuses FP8 there anyway.
            device[i] = tensor_core_model(fp8 ? 90 : sm, kInputs[i]);
            exact[i] = exact_tensor_core_model(kInputs[i]);
        }
    }
};

Models& models() {
    static Models instance;
    return instance;
}

}  // namespace

const TensorCoreModel& simulated_tensor_cores(TensorCoreInput input) {
    Models& m = models();
    const int i = static_cast<int>(input);
    return m.use_exact ? m.exact[i] : m.device[i];
}

bool set_exact_tensor_cores(bool exact) {
    Models& m = models();
    const bool previous = m.use_exact;
    m.use_exact = exact;
    return previous;
}

}  // namespace mixgpt::cuda_sim
