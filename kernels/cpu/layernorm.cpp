// LayerNorm (eps 1e-5, biased variance), alone or fused with the residual add, and its backward;
// parameter-free (weight and bias invalid) as if the weight were 1 and the bias 0, bit for bit.
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

constexpr float kEpsilon = 1e-5f;
constexpr int64_t kColumnBlock = 16;  // columns one thread owns in the weight-gradient sums

// y = (x - mean) * rstd * weight + bias for one row of C values; two-pass statistics.
void normalize_row(const float* x, const float* weight, const float* bias, int64_t C, float* y,
                   float* mean_out, float* rstd_out) {
    float sum = 0.f;
    for (int64_t c = 0; c < C; ++c) sum += x[c];
    const float mean = sum / static_cast<float>(C);
    float squares = 0.f;
    for (int64_t c = 0; c < C; ++c) squares += (x[c] - mean) * (x[c] - mean);
    const float rstd = 1.f / std::sqrt(squares / static_cast<float>(C) + kEpsilon);
    for (int64_t c = 0; c < C; ++c) y[c] = (x[c] - mean) * rstd * weight[c] + bias[c];
    *mean_out = mean;
    *rstd_out = rstd;
}

struct LayerNormArguments {
    int64_t N = 0;
    int64_t C = 0;
};

LayerNormArguments check_forward(const char* op, DType act, const TensorView& out, const TensorView& mean,
                                 const TensorView& rstd, const TensorView& weight, const TensorView& bias) {
    require_rank(out, act, 2, op, "out");
    const int64_t N = out.dim(0), C = out.dim(1);
    require_tensor(mean, DType::f32, {N}, op, "mean");
    require_tensor(rstd, DType::f32, {N}, op, "rstd");
    require(weight.valid() == bias.valid(), op,
            "weight and bias are both given, or both invalid (a parameter-free LayerNorm)");
    if (weight.valid()) {
        require_tensor(weight, act, {C}, op, "weight");
        require_tensor(bias, act, {C}, op, "bias");
    }
    return {N, C};
}

}  // namespace

void CpuBackend::layernorm_forward(TensorView out, TensorView mean, TensorView rstd, TensorView inp,
                                   TensorView weight, TensorView bias) {
    const auto [N, C] = check_forward("layernorm_forward", act(), out, mean, rstd, weight, bias);
    require_tensor(inp, act(), {N, C}, "layernorm_forward", "inp");
    const FloatInput x(scratch_, inp), w(scratch_, weight, C, 1.f), b(scratch_, bias, C, 0.f);
    FloatOutput y(scratch_, out, false);
    float* m = mean.as<float>();
    float* r = rstd.as<float>();
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; ++n)
        normalize_row(x.data() + n * C, w.data(), b.data(), C, y.data() + n * C, m + n, r + n);
    y.store();
}

void CpuBackend::residual_layernorm_forward(TensorView residual_out, TensorView out, TensorView mean,
                                            TensorView rstd, TensorView residual_in, TensorView branch,
                                            TensorView weight, TensorView bias) {
    const char* op = "residual_layernorm_forward";
    const auto [N, C] = check_forward(op, act(), out, mean, rstd, weight, bias);
    require_tensor(residual_out, act(), {N, C}, op, "residual_out");
    require_tensor(residual_in, act(), {N, C}, op, "residual_in");
    require_tensor(branch, act(), {N, C}, op, "branch");
    const FloatInput a(scratch_, residual_in), d(scratch_, branch), w(scratch_, weight, C, 1.f),
        b(scratch_, bias, C, 0.f);
    FloatOutput sum(scratch_, residual_out, false);
    FloatOutput y(scratch_, out, false);
    float* m = mean.as<float>();
    float* r = rstd.as<float>();
    const DType dtype = act();
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
        float* s = sum.data() + n * C;
        // Normalize the stored (rounded) sum, so this equals layernorm_forward(residual_out).
        for (int64_t c = 0; c < C; ++c) s[c] = a.data()[n * C + c] + d.data()[n * C + c];
        round_to_dtype(s, static_cast<size_t>(C), dtype);
        normalize_row(s, w.data(), b.data(), C, y.data() + n * C, m + n, r + n);
    }
    sum.store();
    y.store();
}

void CpuBackend::layernorm_backward(TensorView dinp, TensorView dweight, TensorView dbias, TensorView dout,
                                    TensorView inp, TensorView weight, TensorView mean, TensorView rstd) {
    const char* op = "layernorm_backward";
    require_rank(dout, act(), 2, op, "dout");
    const int64_t N = dout.dim(0), C = dout.dim(1);
    require_tensor(dinp, act(), {N, C}, op, "dinp");
    require(weight.valid() == dweight.valid() && weight.valid() == dbias.valid(), op,
            "weight, dweight and dbias are all given, or all invalid (a parameter-free LayerNorm)");
    if (weight.valid()) {
        require_tensor(dweight, DType::f32, {C}, op, "dweight");
        require_tensor(dbias, DType::f32, {C}, op, "dbias");
        require_tensor(weight, act(), {C}, op, "weight");
    }
    require_tensor(inp, act(), {N, C}, op, "inp");
    require_tensor(mean, DType::f32, {N}, op, "mean");
    require_tensor(rstd, DType::f32, {N}, op, "rstd");
    const FloatInput dy(scratch_, dout), x(scratch_, inp), w(scratch_, weight, C, 1.f);
    const float* m = mean.as<const float>();
    const float* r = rstd.as<const float>();
    FloatOutput dx(scratch_, dinp, true);

#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
        const float* g = dy.data() + n * C;
        const float* xn = x.data() + n * C;
        float mean_dxhat = 0.f;
        float mean_dxhat_xhat = 0.f;
        for (int64_t c = 0; c < C; ++c) {
            const float dxhat = g[c] * w.data()[c];
            mean_dxhat += dxhat;
            mean_dxhat_xhat += dxhat * (xn[c] - m[n]) * r[n];
        }
        mean_dxhat /= static_cast<float>(C);
        mean_dxhat_xhat /= static_cast<float>(C);
        float* out = dx.data() + n * C;
        for (int64_t c = 0; c < C; ++c) {
            const float xhat = (xn[c] - m[n]) * r[n];
            out[c] += r[n] * (g[c] * w.data()[c] - mean_dxhat - xhat * mean_dxhat_xhat);
        }
    }
    dx.store();
    if (!dweight.valid()) return;

    float* dw = dweight.as<float>();
    float* db = dbias.as<float>();
    // Each thread owns whole column blocks and sums rows in order: a fixed summation order.
#pragma omp parallel for schedule(static)
    for (int64_t begin = 0; begin < C; begin += kColumnBlock) {
        const int64_t width = begin + kColumnBlock < C ? kColumnBlock : C - begin;
        float weight_sum[kColumnBlock] = {};
        float bias_sum[kColumnBlock] = {};
        for (int64_t n = 0; n < N; ++n)
            for (int64_t j = 0; j < width; ++j) {
                const float g = dy.data()[n * C + begin + j];
                weight_sum[j] += g * (x.data()[n * C + begin + j] - m[n]) * r[n];
                bias_sum[j] += g;
            }
        for (int64_t j = 0; j < width; ++j) {
            dw[begin + j] += weight_sum[j];
            db[begin + j] += bias_sum[j];
        }
    }
}

}  // namespace mixgpt::cpu
