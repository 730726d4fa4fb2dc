// Element-wise ReLU² forward and backward (--mlp relu2), in fp32, rounded once on store.
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

// max(x, 0) that keeps a NaN (as the CUDA kernels do), so a non-finite input stays visible.
inline float positive_part(float x) { return x < 0.f ? 0.f : x; }

}  // namespace

void CpuBackend::relu2_forward(TensorView out, TensorView inp) {
    require_rank(out, act(), 2, "relu2_forward", "out");
    require_tensor(inp, act(), {out.dim(0), out.dim(1)}, "relu2_forward", "inp");
    const FloatInput x(scratch_, inp);
    FloatOutput y(scratch_, out, false);
    const int64_t n = out.numel();
    const float* in = x.data();
    float* result = y.data();
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float positive = positive_part(in[i]);
        result[i] = positive * positive;
    }
    y.store();
}

void CpuBackend::relu2_backward(TensorView dinp, TensorView dout, TensorView inp) {
    require_rank(dinp, act(), 2, "relu2_backward", "dinp");
    require_tensor(dout, act(), {dinp.dim(0), dinp.dim(1)}, "relu2_backward", "dout");
    require_tensor(inp, act(), {dinp.dim(0), dinp.dim(1)}, "relu2_backward", "inp");
    const FloatInput dy(scratch_, dout), x(scratch_, inp);
    FloatOutput dx(scratch_, dinp, false);
    const int64_t n = dinp.numel();
    const float* gradient = dy.data();
    const float* in = x.data();
    float* result = dx.data();  // may be dout's own memory (in place)
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) result[i] = gradient[i] * (2.f * positive_part(in[i]));
    dx.store();
}

}  // namespace mixgpt::cpu
