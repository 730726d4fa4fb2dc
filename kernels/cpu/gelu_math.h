// GELU, tanh approximation, in float: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
// evaluated as x * sigmoid(2u) (the same function: 0.5 (1 + tanh(u)) = sigmoid(2u)), which
// needs one exp instead of a tanh and has no cancellation near zero. The exp is
// exp_vectorizable (within 2 ulp), so the loops that call these vectorize.
#pragma once

#include "kernels/cpu/vector_exp.h"

namespace mixgpt::cpu {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

inline float gelu_sigmoid(float x) {  // sigmoid(2u)
    return 1.f / (1.f + exp_vectorizable(-2.f * kGeluScale * (x + kGeluCubic * x * x * x)));
}

inline float gelu(float x) { return x * gelu_sigmoid(x); }

// d/dx [x sigmoid(2u)] = sigmoid(2u) + x * 2 sigmoid(2u) (1 - sigmoid(2u)) * du/dx
inline float gelu_derivative(float x) {
    const float s = gelu_sigmoid(x);
    return s + 2.f * x * s * (1.f - s) * kGeluScale * (1.f + 3.f * kGeluCubic * x * x);
}

}  // namespace mixgpt::cpu
