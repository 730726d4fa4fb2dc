// QK-norm (--qk-norm): each query and key head of the packed qkv rows RMS-normalised in place, and
// its backward from the normalised heads and their rstd (kernels/ops.def). Statistics in fp32;
// each head's sum in order over its hd elements (hd is at most a few hundred: the norm costs
// O(N · Q), nothing beside the products that made qkv).
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

// The heads of qkv (B,T,(H+2·Hkv)·hd) that the norm touches: the first H + Hkv of each row.
struct QkHeads {
    int64_t rows = 0, width = 0, heads = 0, head_dim = 0;
};

QkHeads check_qk_norm(const char* op, DType act, const TensorView& qkv, const TensorView& rstd, int n_head,
                      int n_kv_head) {
    require_rank(qkv, act, 3, op, "qkv");
    require(n_head > 0 && n_kv_head > 0 && n_head % n_kv_head == 0, op,
            "n_kv_head must be positive and divide n_head");
    const int64_t width = qkv.dim(2), all_heads = n_head + 2 * int64_t{n_kv_head};
    require(width % all_heads == 0, op, "qkv's row is not (n_head + 2 n_kv_head) heads wide");
    const QkHeads shape{qkv.dim(0) * qkv.dim(1), width, n_head + int64_t{n_kv_head}, width / all_heads};
    require_tensor(rstd, DType::f32, {qkv.dim(0), qkv.dim(1), shape.heads}, op, "rstd");
    return shape;
}

}  // namespace

void CpuBackend::qk_norm_forward(TensorView qkv, TensorView rstd, int n_head, int n_kv_head, float epsilon) {
    const QkHeads s = check_qk_norm("qk_norm_forward", act(), qkv, rstd, n_head, n_kv_head);
    require(epsilon > 0.f, "qk_norm_forward", "epsilon must be positive");
    FloatOutput values(scratch_, qkv, true);
    float* r = rstd.as<float>();
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < s.rows; ++n)
        for (int64_t h = 0; h < s.heads; ++h) {
            float* x = values.data() + n * s.width + h * s.head_dim;
            float squares = 0.f;
            for (int64_t i = 0; i < s.head_dim; ++i) squares += x[i] * x[i];
            const float head_rstd = 1.f / std::sqrt(squares / static_cast<float>(s.head_dim) + epsilon);
            for (int64_t i = 0; i < s.head_dim; ++i) x[i] *= head_rstd;
            r[n * s.heads + h] = head_rstd;
        }
    values.store();
}

void CpuBackend::qk_norm_backward(TensorView dqkv, TensorView qkv, TensorView rstd, int n_head, int n_kv_head) {
    const char* op = "qk_norm_backward";
    const QkHeads s = check_qk_norm(op, act(), qkv, rstd, n_head, n_kv_head);
    require_tensor(dqkv, act(), {qkv.dim(0), qkv.dim(1), qkv.dim(2)}, op, "dqkv");
    const FloatInput y(scratch_, qkv);
    FloatOutput gradients(scratch_, dqkv, true);
    const float* r = rstd.as<const float>();
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < s.rows; ++n)
        for (int64_t h = 0; h < s.heads; ++h) {
            const int64_t offset = n * s.width + h * s.head_dim;
            const float* yh = y.data() + offset;
            float* dy = gradients.data() + offset;
            float dy_y = 0.f;
            for (int64_t i = 0; i < s.head_dim; ++i) dy_y += dy[i] * yh[i];
            const float mean_dy_y = dy_y / static_cast<float>(s.head_dim), head_rstd = r[n * s.heads + h];
            for (int64_t i = 0; i < s.head_dim; ++i) dy[i] = head_rstd * (dy[i] - yh[i] * mean_dy_y);
        }
    gradients.store();
}

}  // namespace mixgpt::cpu
