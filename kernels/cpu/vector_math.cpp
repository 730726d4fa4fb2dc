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

MIXGPT_AVX2_CLONES void rotate_pairs(float* __restrict lo, float* __restrict hi, const float* __restrict cos,
                                     const float* __restrict sin, int64_t half, bool inverse) {
    const float direction = inverse ? -1.f : 1.f;  // sin(-a) = -sin(a); exact
    for (int64_t i = 0; i < half; ++i) {
        const float x = lo[i], y = hi[i], s = direction * sin[i];
        lo[i] = x * cos[i] - y * s;
        hi[i] = y * cos[i] + x * s;
    }
}

namespace {

inline float sigmoid(float x) { return 1.f / (1.f + exp_vectorizable(-x)); }

}  // namespace

MIXGPT_AVX2_CLONES void swiglu_array(const float* gate, const float* up, float* out, int64_t count) {
    for (int64_t i = 0; i < count; ++i) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

MIXGPT_AVX2_CLONES void swiglu_backward_array(const float* __restrict dout, const float* __restrict gate,
                                              const float* __restrict up, float* __restrict dgate,
                                              float* __restrict dup, int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
        const float g = gate[i], s = sigmoid(g);
        dgate[i] = dout[i] * up[i] * (s * (1.f + g * (1.f - s)));
        dup[i] = dout[i] * (g * s);
    }
}

}  // namespace mixgpt::cpu
