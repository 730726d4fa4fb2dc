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

// RoPE on one head, its halves lo and hi (`half` values each): (lo[i], hi[i]) becomes
// (lo cos - hi sin, hi cos + lo sin) with cos[i], sin[i]; `inverse`: (lo cos + hi sin, hi cos - lo sin),
// the rotation back (which takes the gradients of rotated values to those of the originals).
void rotate_pairs(float* lo, float* hi, const float* cos, const float* sin, int64_t half, bool inverse);

// out = silu(gate) * up, silu(g) = g / (1 + exp(-g)) (exp_vectorizable); out may be gate or up.
void swiglu_array(const float* gate, const float* up, float* out, int64_t count);

// dgate = dout * up * silu'(gate), dup = dout * silu(gate), silu'(g) = s (1 + g (1 - s)) with
// s = 1 / (1 + exp(-g)).
void swiglu_backward_array(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                           int64_t count);

}  // namespace mixgpt::cpu
