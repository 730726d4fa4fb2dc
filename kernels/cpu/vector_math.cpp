#include "kernels/cpu/vector_math.h"

#include "kernels/cpu/gelu_math.h"
#include "kernels/cpu/vector_exp.h"

namespace mixgpt::cpu {

// AVX2 without FMA: the clones round alike, so results do not depend on the processor.
#define MIXGPT_AVX2_CLONES __attribute__((target_clones("avx2", "default")))

MIXGPT_AVX2_CLONES void gelu_array(const float* x, float* y, int64_t count) {
    for (int64_t i = 0; i < count; ++i) y[i] = gelu(x[i]);
}

MIXGPT_AVX2_CLONES void gelu_backward_array(const float* dy, const float* x, float* dx, int64_t count) {
    for (int64_t i = 0; i < count; ++i) dx[i] = dy[i] * gelu_derivative(x[i]);
}

MIXGPT_AVX2_CLONES void exp_shifted_array(float* values, int64_t count, float shift) {
    for (int64_t i = 0; i < count; ++i) values[i] = exp_vectorizable(values[i] - shift);
}

}  // namespace mixgpt::cpu
