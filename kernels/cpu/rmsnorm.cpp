// RMSNorm (no mean, no bias; eps a parameter), alone or fused with the residual add, and its
// backward; parameter-free (weight invalid) as if the weight were 1, bit for bit. The row sums
// run in kLanes interleaved partial sums (element c into sum c % kLanes, added in order at the
// end), which the compiler vectorizes, where one running sum would not (no reassociation without
// -ffast-math).
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

constexpr int kLanes = 8;
constexpr int64_t kColumnBlock = 16;  // columns one thread owns in the weight-gradient sums

// sum over c < C of a[c] * b[c] * (c_factor ? c_factor[c] : 1), in kLanes partial sums.
float lane_sum_of_products(const float* a, const float* b, const float* c_factor, int64_t C) {
    float lanes[kLanes] = {};
    int64_t c = 0;
    if (c_factor == nullptr)
        for (; c + kLanes <= C; c += kLanes)
            for (int j = 0; j < kLanes; ++j) lanes[j] += a[c + j] * b[c + j];
    else
        for (; c + kLanes <= C; c += kLanes)
            for (int j = 0; j < kLanes; ++j) lanes[j] += a[c + j] * b[c + j] * c_factor[c + j];
    for (; c < C; ++c) lanes[c % kLanes] += a[c] * b[c] * (c_factor == nullptr ? 1.f : c_factor[c]);
    float total = 0.f;
    for (const float lane : lanes) total += lane;
    return total;
}

// y = x * rstd * weight for one row of C values; rstd = 1 / sqrt(mean(x^2) + epsilon).
void normalize_row(const float* x, const float* weight, int64_t C, float epsilon, float* y, float* rstd_out) {
    const float rstd =
        1.f / std::sqrt(lane_sum_of_products(x, x, nullptr, C) / static_cast<float>(C) + epsilon);
    for (int64_t c = 0; c < C; ++c) y[c] = x[c] * rstd * weight[c];
    *rstd_out = rstd;
}

// out (N,C), rstd (N), weight (C), epsilon > 0; returns {N, C}.
struct RowShape {
    int64_t N = 0, C = 0;
};

RowShape check_forward(const char* op, DType act, const TensorView& out, const TensorView& rstd,
                       const TensorView& weight, float epsilon) {
    require_rank(out, act, 2, op, "out");
    const int64_t N = out.dim(0), C = out.dim(1);
    require_tensor(rstd, DType::f32, {N}, op, "rstd");
    if (weight.valid()) require_tensor(weight, act, {C}, op, "weight");
    require(epsilon > 0.f, op, "epsilon must be positive");
    return {N, C};
}

}  // namespace

void CpuBackend::rmsnorm_forward(TensorView out, TensorView rstd, TensorView inp, TensorView weight,
                                 float epsilon) {
    const auto [N, C] = check_forward("rmsnorm_forward", act(), out, rstd, weight, epsilon);
    require_tensor(inp, act(), {N, C}, "rmsnorm_forward", "inp");
    const FloatInput x(scratch_, inp), w(scratch_, weight, C, 1.f);
    FloatOutput y(scratch_, out, false);
    float* r = rstd.as<float>();
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; ++n)
        normalize_row(x.data() + n * C, w.data(), C, epsilon, y.data() + n * C, r + n);
    y.store();
}

void CpuBackend::residual_rmsnorm_forward(TensorView residual_out, TensorView out, TensorView rstd,
                                          TensorView residual_in, TensorView branch, TensorView weight,
                                          float epsilon) {
    const char* op = "residual_rmsnorm_forward";
    const auto [N, C] = check_forward(op, act(), out, rstd, weight, epsilon);
    require_tensor(residual_out, act(), {N, C}, op, "residual_out");
    require_tensor(residual_in, act(), {N, C}, op, "residual_in");
    require_tensor(branch, act(), {N, C}, op, "branch");
    const FloatInput a(scratch_, residual_in), d(scratch_, branch), w(scratch_, weight, C, 1.f);
    FloatOutput sum(scratch_, residual_out, false);
    FloatOutput y(scratch_, out, false);
    float* r = rstd.as<float>();
    const DType dtype = act();
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
        float* s = sum.data() + n * C;
        // Normalize the stored (rounded) sum, so this equals rmsnorm_forward(residual_out).
        for (int64_t c = 0; c < C; ++c) s[c] = a.data()[n * C + c] + d.data()[n * C + c];
        round_to_dtype(s, static_cast<size_t>(C), dtype);
        normalize_row(s, w.data(), C, epsilon, y.data() + n * C, r + n);
    }
    sum.store();
    y.store();
}

void CpuBackend::rmsnorm_backward(TensorView dinp, TensorView dweight, TensorView dout, TensorView inp,
                                  TensorView weight, TensorView rstd) {
    const char* op = "rmsnorm_backward";
    require_rank(dout, act(), 2, op, "dout");
    const int64_t N = dout.dim(0), C = dout.dim(1);
    require_tensor(dinp, act(), {N, C}, op, "dinp");
    require(weight.valid() == dweight.valid(), op,
            "weight and dweight are both given, or both invalid (a parameter-free RMSNorm)");
    if (weight.valid()) {
        require_tensor(dweight, DType::f32, {C}, op, "dweight");
        require_tensor(weight, act(), {C}, op, "weight");
    }
    require_tensor(inp, act(), {N, C}, op, "inp");
    require_tensor(rstd, DType::f32, {N}, op, "rstd");
    const FloatInput dy(scratch_, dout), x(scratch_, inp), w(scratch_, weight, C, 1.f);
    const float* r = rstd.as<const float>();
    FloatOutput dx(scratch_, dinp, true);

    // dxhat = dout * weight; dinp += rstd * (dxhat - xhat * mean(dxhat * xhat)), xhat = inp * rstd.
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
        const float* g = dy.data() + n * C;
        const float* xn = x.data() + n * C;
        const float mean_dxhat_xhat = lane_sum_of_products(g, w.data(), xn, C) * r[n] / static_cast<float>(C);
        float* out = dx.data() + n * C;
        for (int64_t c = 0; c < C; ++c)
            out[c] += r[n] * (g[c] * w.data()[c] - xn[c] * r[n] * mean_dxhat_xhat);
    }
    dx.store();
    if (!dweight.valid()) return;

    float* dw = dweight.as<float>();
    // Each thread owns whole column blocks and sums rows in order: a fixed summation order.
#pragma omp parallel for schedule(static)
    for (int64_t begin = 0; begin < C; begin += kColumnBlock) {
        const int64_t width = begin + kColumnBlock < C ? kColumnBlock : C - begin;
        float weight_sum[kColumnBlock] = {};
        for (int64_t n = 0; n < N; ++n)
            for (int64_t j = 0; j < width; ++j)
                weight_sum[j] += dy.data()[n * C + begin + j] * x.data()[n * C + begin + j] * r[n];
        for (int64_t j = 0; j < width; ++j) dw[begin + j] += weight_sum[j];
    }
}

}  // namespace mixgpt::cpu
