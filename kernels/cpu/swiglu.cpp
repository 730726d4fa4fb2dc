// SwiGLU forward and backward over the [gate | up] product of one matmul, row by row.
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/tensor_checks.h"
#include "kernels/cpu/vector_math.h"

namespace mixgpt::cpu {
namespace {

// gate_up (M,2F) and a (M,F) tensor; returns F.
int64_t check_halves(const char* op, DType act, const TensorView& gate_up, const TensorView& half,
                     const char* half_name) {
    require_rank(gate_up, act, 2, op, "gate_up");
    require(gate_up.dim(1) % 2 == 0, op, "gate_up's width is odd: it holds [gate | up], F columns each");
    const int64_t M = gate_up.dim(0), F = gate_up.dim(1) / 2;
    require_tensor(half, act, {M, F}, op, half_name);
    return F;
}

bool overlap(const TensorView& a, const TensorView& b) {
    const auto* a_begin = static_cast<const char*>(a.data);
    const auto* b_begin = static_cast<const char*>(b.data);
    return a_begin < b_begin + b.bytes() && b_begin < a_begin + a.bytes();
}

}  // namespace

void CpuBackend::swiglu_forward(TensorView out, TensorView gate_up) {
    const int64_t F = check_halves("swiglu_forward", act(), gate_up, out, "out");
    const int64_t M = out.dim(0);
    const FloatInput x(scratch_, gate_up);
    FloatOutput y(scratch_, out, false);
    const float* in = x.data();
    float* result = y.data();
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < M; ++m) swiglu_array(in + m * 2 * F, in + m * 2 * F + F, result + m * F, F);
    y.store();
}

void CpuBackend::swiglu_backward(TensorView dgate_up, TensorView dout, TensorView gate_up) {
    const char* op = "swiglu_backward";
    const int64_t F = check_halves(op, act(), gate_up, dout, "dout");
    const int64_t M = dout.dim(0);
    require_tensor(dgate_up, act(), {M, 2 * F}, op, "dgate_up");
    require(!overlap(dgate_up, gate_up) && !overlap(dgate_up, dout), op,
            "dgate_up overlaps gate_up or dout (it is written while they are read)");
    const FloatInput x(scratch_, gate_up), dy(scratch_, dout);
    FloatOutput dx(scratch_, dgate_up, false);
    const float* in = x.data();
    const float* gradient = dy.data();
    float* result = dx.data();
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < M; ++m)
        swiglu_backward_array(gradient + m * F, in + m * 2 * F, in + m * 2 * F + F, result + m * 2 * F,
                              result + m * 2 * F + F, F);
    dx.store();
}

}  // namespace mixgpt::cpu
