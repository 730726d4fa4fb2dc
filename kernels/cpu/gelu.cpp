// Element-wise GELU forward and backward.
#include <algorithm>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/tensor_checks.h"
#include "kernels/cpu/vector_math.h"

namespace mixgpt::cpu {
namespace {

constexpr int64_t kChunk = 16384;  // elements of one work item

}  // namespace

void CpuBackend::gelu_forward(TensorView out, TensorView inp) {
    require_rank(out, act(), 2, "gelu_forward", "out");
    require_tensor(inp, act(), {out.dim(0), out.dim(1)}, "gelu_forward", "inp");
    const FloatInput x(scratch_, inp);
    FloatOutput y(scratch_, out, false);
    const int64_t n = out.numel();
    const float* in = x.data();
    float* result = y.data();
#pragma omp parallel for schedule(static)
    for (int64_t begin = 0; begin < n; begin += kChunk)
        gelu_array(in + begin, result + begin, std::min(kChunk, n - begin));
    y.store();
}

void CpuBackend::gelu_backward(TensorView dinp, TensorView dout, TensorView pre_gelu) {
    require_rank(dinp, act(), 2, "gelu_backward", "dinp");
    require_tensor(dout, act(), {dinp.dim(0), dinp.dim(1)}, "gelu_backward", "dout");
    require_tensor(pre_gelu, act(), {dinp.dim(0), dinp.dim(1)}, "gelu_backward", "pre_gelu");
    const FloatInput dy(scratch_, dout), x(scratch_, pre_gelu);
    FloatOutput dx(scratch_, dinp, false);
    const int64_t n = dinp.numel();
    const float* gradient = dy.data();
    const float* in = x.data();
    float* result = dx.data();  // may be dout's own memory (in place)
#pragma omp parallel for schedule(static)
    for (int64_t begin = 0; begin < n; begin += kChunk)
        gelu_backward_array(gradient + begin, in + begin, result + begin, std::min(kChunk, n - begin));
    dx.store();
}

}  // namespace mixgpt::cpu
