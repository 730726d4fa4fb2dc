// Element-wise loops over float arrays, shared by the CPU ops and compiled for AVX2 as well as the
// baseline (the loader picks the clone the processor runs). Neither clone fuses multiply-adds, so
// both give the same bits, as do their vector bodies and scalar remainders: results depend neither
// on the processor nor on the thread count.
#pragma once

#include <cstdint>

namespace mixgpt::cpu {

// y = gelu(x) (gelu_math.h); y may be x.
void gelu_array(const float* x, float* y, int64_t count);

// dx = dy * gelu'(x); dx may be dy.
void gelu_backward_array(const float* dy, const float* x, float* dx, int64_t count);

// values = exp(values - shift) (exp_vectorizable: within 2 ulp).
void exp_shifted_array(float* values, int64_t count, float shift);

}  // namespace mixgpt::cpu
