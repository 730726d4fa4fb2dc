// Causal multi-head attention, straightforward per (batch, head) with a T x T
// scratch: the reference the fused GPU kernels are checked against. Parallel over
// (b, h) pairs, whose outputs are disjoint; the products inside one pair are
// single-threaded sgemm calls (OpenBLAS runs serially inside a parallel region),
// so every sum is blocked the same way whatever the thread count.
#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/tensor_checks.h"
#include "kernels/cpu/vector_math.h"

namespace mixgpt::cpu {
namespace {

// Rows of one head: element (row, d) at data[row * stride + d].
struct HeadRows {
    const float* data;
    int64_t stride;
};

// C (M,N) = alpha * A (M,K) · op(B) + beta * C, single-threaded call inside the (b, h) loop.
void gemm(bool transpose_a, bool transpose_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
                transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
                static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, C,
                static_cast<int>(ldc));
}

// One head: Tq queries at positions offset .. offset+Tq-1 over Tk = offset + Tq keys, query i
// seeing keys 0 .. offset+i. Writes out (Tq, hd) at `out` with stride ldo and, if lse is not null,
// each query's log-sum-exp. `p` is scratch of Tq * Tk floats.
void head_forward(HeadRows q, HeadRows k, HeadRows v, int64_t Tq, int64_t offset, int64_t hd, float* p,
                  float* out, int64_t ldo, float* lse) {
    const int64_t Tk = offset + Tq;
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    gemm(false, true, Tq, Tk, hd, scale, q.data, q.stride, k.data, k.stride, 0.f, p, Tk);  // scores
    for (int64_t i = 0; i < Tq; ++i) {
        float* row = p + i * Tk;
        const int64_t visible = offset + i + 1;
        const float max_score = *std::max_element(row, row + visible);
        exp_shifted_array(row, visible, max_score);
        float sum = 0.f;
        for (int64_t s = 0; s < visible; ++s) sum += row[s];
        const float inverse = 1.f / sum;
        for (int64_t s = 0; s < visible; ++s) row[s] *= inverse;
        std::fill(row + visible, row + Tk, 0.f);
        if (lse != nullptr) lse[i] = max_score + std::log(sum);
    }
    gemm(false, false, Tq, hd, Tk, 1.f, p, Tk, v.data, v.stride, 0.f, out, ldo);
}

struct AttentionShape {
    int64_t B, T, C, H, head_dim;
};

AttentionShape check_qkv(const char* op, DType act, const TensorView& qkv, int n_head) {
    require_rank(qkv, act, 3, op, "qkv");
    const int64_t C3 = qkv.dim(2);
    require(n_head > 0 && C3 % (3 * int64_t{n_head}) == 0, op,
            "qkv's last dimension is not 3 * n_head * head_dim");
    return {qkv.dim(0), qkv.dim(1), C3 / 3, n_head, C3 / 3 / n_head};
}

}  // namespace

void CpuBackend::attention_forward(TensorView out, TensorView lse, TensorView qkv, int n_head) {
    const char* op = "attention_forward";
    const auto [B, T, C, H, hd] = check_qkv(op, act(), qkv, n_head);
    require_tensor(out, act(), {B, T, C}, op, "out");
    require_tensor(lse, DType::f32, {B, H, T}, op, "lse");
    const FloatInput x(scratch_, qkv);
    FloatOutput y(scratch_, out, false);
    float* l = lse.as<float>();
#pragma omp parallel
    {
        const ScratchLease p = scratch_.borrow(static_cast<size_t>(T * T));
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; ++bh) {
            const int64_t b = bh / H, h = bh % H;
            const float* base = x.data() + b * T * 3 * C + h * hd;
            head_forward({base, 3 * C}, {base + C, 3 * C}, {base + 2 * C, 3 * C}, T, 0, hd, p.data(),
                         y.data() + b * T * C + h * hd, C, l + bh * T);
        }
    }
    y.store();
}

void CpuBackend::attention_backward(TensorView dqkv, TensorView dout, TensorView qkv, TensorView out,
                                    TensorView lse, int n_head) {
    const char* op = "attention_backward";
    const auto [B, T, C, H, hd] = check_qkv(op, act(), qkv, n_head);
    require_tensor(dqkv, act(), {B, T, 3 * C}, op, "dqkv");
    require_tensor(dout, act(), {B, T, C}, op, "dout");
    require_tensor(out, act(), {B, T, C}, op, "out");
    require_tensor(lse, DType::f32, {B, H, T}, op, "lse");
    const FloatInput x(scratch_, qkv), dy(scratch_, dout);
    FloatOutput dx(scratch_, dqkv, false);
    const float* l = lse.as<const float>();
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
#pragma omp parallel
    {
        const ScratchLease p = scratch_.borrow(static_cast<size_t>(T * T));
        const ScratchLease dp = scratch_.borrow(static_cast<size_t>(T * T));
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; ++bh) {
            const int64_t b = bh / H, h = bh % H, row = 3 * C;
            const float* q = x.data() + b * T * row + h * hd;
            const float* k = q + C;
            const float* v = q + 2 * C;
            const float* g = dy.data() + b * T * C + h * hd;
            float* dq = dx.data() + b * T * row + h * hd;
            // P from the saved log-sum-exp; dP = dout · V^T; dS = P (dP - rowsum(P dP)) * scale.
            gemm(false, true, T, T, hd, scale, q, row, k, row, 0.f, p.data(), T);
            gemm(false, true, T, T, hd, 1.f, g, C, v, row, 0.f, dp.data(), T);
            for (int64_t t = 0; t < T; ++t) {
                float* pt = p.data() + t * T;
                float* dpt = dp.data() + t * T;
                const float log_sum_exp = l[bh * T + t];
                exp_shifted_array(pt, t + 1, log_sum_exp);
                float weighted = 0.f;
                for (int64_t s = 0; s <= t; ++s) weighted += pt[s] * dpt[s];
                for (int64_t s = 0; s <= t; ++s) dpt[s] = pt[s] * (dpt[s] - weighted) * scale;
                std::fill(pt + t + 1, pt + T, 0.f);
                std::fill(dpt + t + 1, dpt + T, 0.f);
            }
            gemm(false, false, T, hd, T, 1.f, dp.data(), T, k, row, 0.f, dq, row);      // dQ = dS K
            gemm(true, false, T, hd, T, 1.f, dp.data(), T, q, row, 0.f, dq + C, row);   // dK = dS^T Q
            gemm(true, false, T, hd, T, 1.f, p.data(), T, g, C, 0.f, dq + 2 * C, row);  // dV = P^T dout
        }
    }
    dx.store();
}

void CpuBackend::attention_forward_cached(TensorView out, TensorView qkv, TensorView k_cache,
                                          TensorView v_cache, int position, int n_head) {
    const char* op = "attention_forward_cached";
    const auto [B, Tn, C, H, hd] = check_qkv(op, act(), qkv, n_head);
    require_tensor(out, act(), {B, Tn, C}, op, "out");
    require_rank(k_cache, act(), 3, op, "k_cache");
    const int64_t max_T = k_cache.dim(1);
    require_tensor(k_cache, act(), {B, max_T, C}, op, "k_cache");
    require_tensor(v_cache, act(), {B, max_T, C}, op, "v_cache");
    require(position >= 0 && position + Tn <= max_T, op, "positions run past the cache's length");
    const int64_t count = position + Tn;
    const size_t element = dtype_size(act());
    auto* k_bytes = static_cast<char*>(k_cache.data);
    auto* v_bytes = static_cast<char*>(v_cache.data);
    const auto* qkv_bytes = static_cast<const char*>(qkv.data);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < Tn; ++t) {
            const int64_t source = (b * Tn + t) * 3 * C, target = (b * max_T + position + t) * C;
            std::copy_n(qkv_bytes + (source + C) * element, C * element, k_bytes + target * element);
            std::copy_n(qkv_bytes + (source + 2 * C) * element, C * element, v_bytes + target * element);
        }

    const FloatInput q(scratch_, qkv);
    const ScratchLease keys = scratch_.borrow(static_cast<size_t>(B * count * C));
    const ScratchLease values = scratch_.borrow(static_cast<size_t>(B * count * C));
    for (int64_t b = 0; b < B; ++b) {
        parallel_to_float(k_bytes + b * max_T * C * element, act(), keys.data() + b * count * C, count * C);
        parallel_to_float(v_bytes + b * max_T * C * element, act(), values.data() + b * count * C, count * C);
    }
    FloatOutput y(scratch_, out, false);
#pragma omp parallel
    {
        const ScratchLease p = scratch_.borrow(static_cast<size_t>(Tn * count));
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; ++bh) {
            const int64_t b = bh / H, h = bh % H;
            head_forward({q.data() + b * Tn * 3 * C + h * hd, 3 * C},
                         {keys.data() + b * count * C + h * hd, C},
                         {values.data() + b * count * C + h * hd, C}, Tn, position, hd, p.data(),
                         y.data() + b * Tn * C + h * hd, C, nullptr);
        }
    }
    y.store();
}

}  // namespace mixgpt::cpu
