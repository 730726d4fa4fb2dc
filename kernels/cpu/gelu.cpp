// Element-wise GELU forward and backward.
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/gelu_math.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {

void CpuBackend::gelu_forward(TensorView out, TensorView inp) {
    require_rank(out, act(), 2, "gelu_forward", "out");
    require_tensor(inp, act(), {out.dim(0), out.dim(1)}, "gelu_forward", "inp");
    const FloatInput x(scratch_, inp);
    FloatOutput y(scratch_, out, false);
    const int64_t n = out.numel();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) y.data()[i] = gelu(x.data()[i]);
    y.store();
}

void CpuBackend::gelu_backward(TensorView dinp, TensorView dout, TensorView pre_gelu) {
    require_rank(dinp, act(), 2, "gelu_backward", "dinp");
    require_tensor(dout, act(), {dinp.dim(0), dinp.dim(1)}, "gelu_backward", "dout");
    require_tensor(pre_gelu, act(), {dinp.dim(0), dinp.dim(1)}, "gelu_backward", "pre_gelu");
    const FloatInput dy(scratch_, dout), x(scratch_, pre_gelu);
    FloatOutput dx(scratch_, dinp, false);
    const int64_t n = dinp.numel();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) dx.data()[i] = dy.data()[i] * gelu_derivative(x.data()[i]);
    dx.store();
}

}  // namespace mixgpt::cpu
