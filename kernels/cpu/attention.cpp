// Causal attention with grouped key/value heads and RoPE, straightforward per (batch, head) with
// a T x T scratch: the reference the fused GPU kernels are checked against. Parallel over (b, h)
// pairs in the forward and (b, key/value head) pairs in the backward, whose outputs are
// disjoint; the products inside one pair are single-threaded sgemm calls (OpenBLAS runs serially
// inside a parallel region), so every sum is blocked the same way whatever the thread count.
// Under RoPE, q and k are rotated (and rounded to act) into a scratch copy first; the backward
// rotates the gradients of q and k back once they are complete. Under the document mask each
// document of a sequence is a causal attention of its own, so the work follows the sum of the
// documents' squared lengths, not T^2. A sliding window (params.window) masks within each
// document's products (its cost stays that of the document's causal half).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

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

    HeadRows from(int64_t row) const { return {data + row * stride, stride}; }
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
// seeing keys first_keys[i] .. offset+i (first_keys null: from 0). Writes out (Tq, hd) at `out`
// with stride ldo and, if lse is not null, each query's log-sum-exp. `p` is scratch of Tq * Tk floats.
void head_forward(HeadRows q, HeadRows k, HeadRows v, int64_t Tq, int64_t offset, int64_t hd, float* p,
                  float* out, int64_t ldo, float* lse, const int32_t* first_keys = nullptr) {
    const int64_t Tk = offset + Tq;
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    gemm(false, true, Tq, Tk, hd, scale, q.data, q.stride, k.data, k.stride, 0.f, p, Tk);  // scores
    for (int64_t i = 0; i < Tq; ++i) {
        const int64_t first = first_keys == nullptr ? 0 : first_keys[i];
        float* row = p + i * Tk + first;
        const int64_t visible = offset + i + 1 - first;
        const float max_score = *std::max_element(row, row + visible);
        exp_shifted_array(row, visible, max_score);
        float sum = 0.f;
        for (int64_t s = 0; s < visible; ++s) sum += row[s];
        const float inverse = 1.f / sum;
        for (int64_t s = 0; s < visible; ++s) row[s] *= inverse;
        std::fill(p + i * Tk, row, 0.f);
        std::fill(row + visible, p + (i + 1) * Tk, 0.f);
        if (lse != nullptr) lse[i] = max_score + std::log(sum);
    }
    gemm(false, false, Tq, hd, Tk, 1.f, p, Tk, v.data, v.stride, 0.f, out, ldo);
}

// Where the heads of a packed qkv (kernels/ops.def) sit: H query heads, then Hkv key heads and
// Hkv value heads, hd elements each.
struct QkvLayout {
    int64_t B, T, H, Hkv, hd;

    int64_t group() const { return H / Hkv; }           // query heads per key/value head
    int64_t row() const { return (H + 2 * Hkv) * hd; }  // elements of one qkv row
    int64_t q_width() const { return H * hd; }          // out's row; k starts there
    int64_t k_column(int64_t g) const { return (H + g) * hd; }
    int64_t v_column(int64_t g) const { return (H + Hkv + g) * hd; }
};

// The document bounds of a training op's params: null without the document mask, else
// document_ends (B,T), checked with document_starts.
const int32_t* document_ends(const char* op, const AttentionParams& params, int64_t B, int64_t T) {
    require(params.document_starts.valid() == params.document_ends.valid(), op,
            "document_starts and document_ends go together");
    if (!params.document_ends.valid()) return nullptr;
    require_int32(params.document_starts, {B, T}, op, "document_starts");
    require_int32(params.document_ends, {B, T}, op, "document_ends");
    return params.document_ends.as<const int32_t>();
}

// Calls f(first, count) for each document [first, first + count) of sequence b, in order: the
// whole sequence without document bounds.
template <typename F>
void for_each_document(const int32_t* ends, int64_t b, int64_t T, F&& f) {
    for (int64_t first = 0; first < T;) {
        const int64_t end = ends == nullptr ? T : ends[b * T + first];
        f(first, end - first);
        first = end;
    }
}

// The first key of each of a document's n queries under the sliding window (0: none), counted from
// the document's first position.
void window_first_keys(int64_t n, int window, std::vector<int32_t>& first_keys) {
    first_keys.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        first_keys[static_cast<size_t>(i)] =
            window > 0 ? static_cast<int32_t>(std::max<int64_t>(0, i - window + 1)) : 0;
}

QkvLayout check_qkv(const char* op, DType act, const TensorView& qkv, const AttentionParams& params) {
    require_rank(qkv, act, 3, op, "qkv");
    require(params.window >= 0, op, "window must not be negative (0: none)");
    const int64_t H = params.n_head, Hkv = params.n_kv_head;
    require(H > 0 && Hkv > 0 && H % Hkv == 0, op, "n_kv_head must be positive and divide n_head");
    require(qkv.dim(2) % (H + 2 * Hkv) == 0 && qkv.dim(2) > 0, op,
            "qkv's last dimension is not (n_head + 2 * n_kv_head) * head_dim");
    const int64_t hd = qkv.dim(2) / (H + 2 * Hkv);
    require(params.rope_theta >= 0.f, op, "rope_theta must be positive, or 0 for no rotation");
    require(params.rope_theta == 0.f || hd % 2 == 0, op, "RoPE needs an even head_dim");
    return {qkv.dim(0), qkv.dim(1), H, Hkv, hd};
}

// q and k of each of `rows` qkv rows (row r at position first_position + r % T) rotated by RoPE
// and rounded to `act`: (rows, (H + Hkv) hd) floats, laid out as the rows' first H + Hkv heads.
void rotate_queries_keys(const float* qkv, int64_t rows, const QkvLayout& s, int64_t first_position,
                         const float* table, DType act, float* rotated) {
    const int64_t width = (s.H + s.Hkv) * s.hd, half = s.hd / 2;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        float* row = rotated + r * width;
        std::copy_n(qkv + r * s.row(), width, row);
        const float* angles = table + (first_position + r % s.T) * s.hd;  // cos, then sin
        for (int64_t head = 0; head < s.H + s.Hkv; ++head)
            rotate_pairs(row + head * s.hd, row + head * s.hd + half, angles, angles + half, half, false);
        round_to_dtype(row, static_cast<size_t>(width), act);
    }
}

// The gradients of rotated q and k (the first H + Hkv heads of each dqkv row) rotated back.
void rotate_gradients_back(float* dqkv, const QkvLayout& s, const float* table) {
    const int64_t half = s.hd / 2;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < s.B * s.T; ++r) {
        float* row = dqkv + r * s.row();
        const float* angles = table + (r % s.T) * s.hd;
        for (int64_t head = 0; head < s.H + s.Hkv; ++head)
            rotate_pairs(row + head * s.hd, row + head * s.hd + half, angles, angles + half, half, true);
    }
}

// Where the products read q and k: the qkv rows themselves, or their rotated copy (whose rows
// hold the same heads at the same columns, without the values).
struct QueryKeySource {
    const float* data;
    int64_t stride;  // between rows
    QkvLayout s;

    // Rows of query head h of batch b, and of key head g.
    HeadRows query(int64_t b, int64_t h) const { return {data + b * s.T * stride + h * s.hd, stride}; }
    HeadRows key(int64_t b, int64_t g) const { return {data + b * s.T * stride + s.k_column(g), stride}; }
};

}  // namespace

const float* CpuBackend::rope_table(const AttentionParams& params, int64_t head_dim, int64_t positions) {
    if (params.rope_theta == 0.f) return nullptr;
    return rope_tables_.get(params.rope_theta, static_cast<int>(head_dim), positions).values.data();
}

void CpuBackend::attention_forward(TensorView out, TensorView lse, TensorView qkv,
                                   const AttentionParams& params) {
    const char* op = "attention_forward";
    const QkvLayout s = check_qkv(op, act(), qkv, params);
    const auto [B, T, H, Hkv, hd] = s;
    require_tensor(out, act(), {B, T, H * hd}, op, "out");
    require_tensor(lse, DType::f32, {B, H, T}, op, "lse");
    const int32_t* ends = document_ends(op, params, B, T);
    const FloatInput x(scratch_, qkv);
    const float* table = rope_table(params, hd, T);
    ScratchLease rotated;
    QueryKeySource source{x.data(), s.row(), s};
    if (table != nullptr) {
        rotated = scratch_.borrow(static_cast<size_t>(B * T * (H + Hkv) * hd));
        rotate_queries_keys(x.data(), B * T, s, 0, table, act(), rotated.data());
        source = {rotated.data(), (H + Hkv) * hd, s};
    }
    FloatOutput y(scratch_, out, false);
    float* l = lse.as<float>();
#pragma omp parallel
    {
        const ScratchLease p = scratch_.borrow(static_cast<size_t>(T * T));
        std::vector<int32_t> first_keys;
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; ++bh) {
            const int64_t b = bh / H, h = bh % H, g = h / s.group();
            const HeadRows v{x.data() + b * T * s.row() + s.v_column(g), s.row()};
            float* head_out = y.data() + b * T * s.q_width() + h * hd;
            for_each_document(ends, b, T, [&](int64_t first, int64_t count) {
                window_first_keys(count, params.window, first_keys);
                head_forward(source.query(b, h).from(first), source.key(b, g).from(first), v.from(first),
                             count, 0, hd, p.data(), head_out + first * s.q_width(), s.q_width(),
                             l + bh * T + first, first_keys.data());
            });
        }
    }
    y.store();
}

void CpuBackend::attention_backward(TensorView dqkv, TensorView dout, TensorView qkv, TensorView lse,
                                    const AttentionParams& params) {
    const char* op = "attention_backward";
    const QkvLayout s = check_qkv(op, act(), qkv, params);
    const auto [B, T, H, Hkv, hd] = s;
    require_tensor(dqkv, act(), {B, T, s.row()}, op, "dqkv");
    require_tensor(dout, act(), {B, T, H * hd}, op, "dout");
    require_tensor(lse, DType::f32, {B, H, T}, op, "lse");
    const int32_t* ends = document_ends(op, params, B, T);
    const FloatInput x(scratch_, qkv), dy(scratch_, dout);
    const float* table = rope_table(params, hd, T);
    ScratchLease rotated;
    QueryKeySource source{x.data(), s.row(), s};
    if (table != nullptr) {
        rotated = scratch_.borrow(static_cast<size_t>(B * T * (H + Hkv) * hd));
        rotate_queries_keys(x.data(), B * T, s, 0, table, act(), rotated.data());
        source = {rotated.data(), (H + Hkv) * hd, s};
    }
    FloatOutput dx(scratch_, dqkv, false);
    const float* l = lse.as<const float>();
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    const int64_t row = s.row(), out_row = s.q_width();
#pragma omp parallel
    {
        const ScratchLease p = scratch_.borrow(static_cast<size_t>(T * T));
        const ScratchLease dp = scratch_.borrow(static_cast<size_t>(T * T));
#pragma omp for schedule(static)
        for (int64_t bg = 0; bg < B * Hkv; ++bg) {
            const int64_t b = bg / Hkv, g = bg % Hkv;
            const HeadRows k = source.key(b, g);
            const float* v = x.data() + b * T * row + s.v_column(g);
            float* dk = dx.data() + b * T * row + s.k_column(g);
            float* dv = dx.data() + b * T * row + s.v_column(g);
            // The group's query heads in order; the first overwrites dk and dv, the others add.
            for (int64_t j = 0; j < s.group(); ++j) {
                const int64_t h = g * s.group() + j, bh = b * H + h;
                const float accumulate = j == 0 ? 0.f : 1.f;
                for_each_document(ends, b, T, [&](int64_t first, int64_t n) {
                    const HeadRows q = source.query(b, h).from(first), kd = k.from(first);
                    const float* gradient = dy.data() + (b * T + first) * out_row + h * hd;
                    const float* vd = v + first * row;
                    float* dq = dx.data() + (b * T + first) * row + h * hd;
                    const int64_t offset = first * row;
                    // P from the saved log-sum-exp; dP = dout · V^T; dS = P (dP - rowsum(P dP)) * scale.
                    gemm(false, true, n, n, hd, scale, q.data, q.stride, kd.data, kd.stride, 0.f, p.data(),
                         n);
                    gemm(false, true, n, n, hd, 1.f, gradient, out_row, vd, row, 0.f, dp.data(), n);
                    for (int64_t t = 0; t < n; ++t) {
                        float* pt = p.data() + t * n;
                        float* dpt = dp.data() + t * n;
                        const float log_sum_exp = l[bh * T + first + t];
                        const int64_t lo = params.window > 0 ? std::max<int64_t>(0, t - params.window + 1) : 0;
                        exp_shifted_array(pt + lo, t + 1 - lo, log_sum_exp);
                        float weighted = 0.f;
                        for (int64_t u = lo; u <= t; ++u) weighted += pt[u] * dpt[u];
                        for (int64_t u = lo; u <= t; ++u) dpt[u] = pt[u] * (dpt[u] - weighted) * scale;
                        std::fill(pt, pt + lo, 0.f);
                        std::fill(dpt, dpt + lo, 0.f);
                        std::fill(pt + t + 1, pt + n, 0.f);
                        std::fill(dpt + t + 1, dpt + n, 0.f);
                    }
                    gemm(false, false, n, hd, n, 1.f, dp.data(), n, kd.data, kd.stride, 0.f, dq,
                         row);  // dQ = dS K
                    gemm(true, false, n, hd, n, 1.f, dp.data(), n, q.data, q.stride, accumulate, dk + offset,
                         row);  // dS^T Q
                    gemm(true, false, n, hd, n, 1.f, p.data(), n, gradient, out_row, accumulate, dv + offset,
                         row);  // P^T dout
                });
            }
        }
    }
    if (table != nullptr) rotate_gradients_back(dx.data(), s, table);
    dx.store();
}

void CpuBackend::attention_forward_cached(TensorView out, TensorView qkv, TensorView k_cache,
                                          TensorView v_cache, int position, const AttentionParams& params) {
    const char* op = "attention_forward_cached";
    const QkvLayout s = check_qkv(op, act(), qkv, params);
    const auto [B, Tn, H, Hkv, hd] = s;
    const int64_t kv_width = Hkv * hd;
    require_tensor(out, act(), {B, Tn, H * hd}, op, "out");
    require_rank(k_cache, act(), 3, op, "k_cache");
    const int64_t max_T = k_cache.dim(1);
    require_tensor(k_cache, act(), {B, max_T, kv_width}, op, "k_cache");
    require_tensor(v_cache, act(), {B, max_T, kv_width}, op, "v_cache");
    require(position >= 0 && position + Tn <= max_T, op, "positions run past the cache's length");
    // (B, Tn) the cache row of each new query's first visible key: its document's start, and past
    // the sliding window.
    std::vector<int32_t> first_keys(static_cast<size_t>(B * Tn), 0);
    if (params.document_starts.valid()) {
        require_int32(params.document_starts, {B, Tn}, op, "document_starts");
        const int32_t* starts = params.document_starts.as<const int32_t>();
        for (int64_t i = 0; i < B * Tn; ++i) {
            require(starts[i] >= 0 && starts[i] <= position + i % Tn, op, "a document starts after its query");
            first_keys[static_cast<size_t>(i)] = starts[i];
        }
    }
    if (params.window > 0)
        for (int64_t i = 0; i < B * Tn; ++i)
            first_keys[static_cast<size_t>(i)] = static_cast<int32_t>(
                std::max<int64_t>(first_keys[static_cast<size_t>(i)], position + i % Tn - params.window + 1));
    const int64_t count = position + Tn;
    const size_t element = dtype_size(act());
    auto* k_bytes = static_cast<char*>(k_cache.data);
    auto* v_bytes = static_cast<char*>(v_cache.data);
    const auto* qkv_bytes = static_cast<const char*>(qkv.data);

    const FloatInput x(scratch_, qkv);
    const float* table = rope_table(params, hd, max_T);
    ScratchLease rotated;
    QueryKeySource source{x.data(), s.row(), s};
    if (table != nullptr) {
        rotated = scratch_.borrow(static_cast<size_t>(B * Tn * (H + Hkv) * hd));
        rotate_queries_keys(x.data(), B * Tn, s, position, table, act(), rotated.data());
        source = {rotated.data(), (H + Hkv) * hd, s};
    }
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < Tn; ++t) {
            const int64_t row = b * Tn + t, target = (b * max_T + position + t) * kv_width;
            // The new keys, rotated (their rotation is exact in act: rounded to it) or as given.
            if (table != nullptr)
                convert_from_float(source.key(b, 0).data + t * source.stride, k_bytes + target * element,
                                   act(), static_cast<size_t>(kv_width));
            else
                std::copy_n(qkv_bytes + (row * s.row() + s.k_column(0)) * element, kv_width * element,
                            k_bytes + target * element);
            std::copy_n(qkv_bytes + (row * s.row() + s.v_column(0)) * element, kv_width * element,
                        v_bytes + target * element);
        }

    const ScratchLease keys = scratch_.borrow(static_cast<size_t>(B * count * kv_width));
    const ScratchLease values = scratch_.borrow(static_cast<size_t>(B * count * kv_width));
    for (int64_t b = 0; b < B; ++b) {
        parallel_to_float(k_bytes + b * max_T * kv_width * element, act(), keys.data() + b * count * kv_width,
                          count * kv_width);
        parallel_to_float(v_bytes + b * max_T * kv_width * element, act(),
                          values.data() + b * count * kv_width, count * kv_width);
    }
    FloatOutput y(scratch_, out, false);
#pragma omp parallel
    {
        const ScratchLease p = scratch_.borrow(static_cast<size_t>(Tn * count));
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; ++bh) {
            const int64_t b = bh / H, h = bh % H, g = h / s.group();
            head_forward(source.query(b, h), {keys.data() + b * count * kv_width + g * hd, kv_width},
                         {values.data() + b * count * kv_width + g * hd, kv_width}, Tn, position, hd,
                         p.data(), y.data() + b * Tn * s.q_width() + h * hd, s.q_width(), nullptr,
                         first_keys.data() + b * Tn);
        }
    }
    y.store();
}

}  // namespace mixgpt::cpu
