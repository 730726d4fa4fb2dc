// cast and scale.
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {

void CpuBackend::cast(TensorView out, TensorView in) {
    require(out.valid() && in.valid(), "cast", "out and in must be valid");
    require(out.numel() == in.numel(), "cast", "out and in differ in element count");
    const FloatInput values(scratch_, in);
    parallel_from_float(values.data(), out.data, out.dtype, out.numel());
}

void CpuBackend::scale(TensorView x, float factor) {
    require(x.valid() && x.dtype == DType::f32, "scale", "x must be an fp32 tensor");
    float* values = x.as<float>();
    const int64_t n = x.numel();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) values[i] *= factor;
}

}  // namespace mixgpt::cpu
