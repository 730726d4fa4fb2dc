// fp32 causal attention as cuBLASLt products and row kernels: design in attention_products.h.
#include "kernels/cuda/attention_products.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cublaslt_fallback.h"
#include "kernels/cuda/online_softmax.cuh"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;

// Row t's visible keys under the masks: [first_key(t), t], the document's start and the window's.
__device__ __forceinline__ int first_key(const int32_t* starts, int64_t b, int T, int t, int window) {
    const int start = starts == nullptr ? 0 : starts[b * T + t];
    return window > 0 ? max(start, t - window + 1) : start;
}

// A warp's sum, in every lane (block_reduce's warp reduction).
struct WarpSum {
    __device__ float operator()(float value) const { return warp_sum(value); }
};

// RoPE on the first `heads` heads of each of T rows: destination row t (destination_ld floats
// apart) = source row t (source_ld apart) with each pair (d, d + hd/2) rotated at position t as
// attention_simple.cu's rotate_pair does, or with kInverse rotated back as its store_row does (the
// gradients of rotated heads become those of the heads before; in place when destination is
// source). A thread a pair.
template <bool kInverse>
__global__ void rope_pairs_kernel(float* destination, int64_t destination_ld, const float* source,
                                  int64_t source_ld, int T, int heads, int hd, const float* rope) {
    declare_launch_limits<kThreads>();
    const int half = hd / 2;
    const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (i >= int64_t{T} * heads * half) return;
    const int d = static_cast<int>(i % half);
    const int head = static_cast<int>(i / half % heads);
    const int t = static_cast<int>(i / half / heads);
    const float* in = source + t * source_ld + head * hd;
    const float x = in[d], y = in[d + half];
    const float cosine = rope[int64_t{t} * hd + d], sine = rope[int64_t{t} * hd + half + d];
    float* out = destination + t * destination_ld + head * hd;
    out[d] = kInverse ? x * cosine + y * sine : x * cosine - y * sine;
    out[d + half] = kInverse ? y * cosine - x * sine : y * cosine + x * sine;
}

// Which rows a row kernel works on: sequence b; block (t, i) takes row t of chunk head i, the key/value
// head g0 + i and its query head (g0 + i) · group + j.
struct RowArgs {
    int64_t b;
    int T, H, group, j;
    int64_t g0;
    float scale;
    const int32_t* starts;
    int window;

    __device__ int64_t lse_index(int t) const {
        const int64_t h = (g0 + blockIdx.y) * group + j;
        return (b * H + h) * T + t;
    }
};

// scores (chunk, T, T): row t of chunk head blockIdx.y becomes P, the probabilities exp(scale · s -
// lse) of the visible keys and 0 elsewhere. kFromScores: lse is the visible scaled scores'
// log-sum-exp, written to lse_out (B,H,T) (the forward); else read from lse_in (the backward).
template <bool kFromScores>
__global__ void probabilities_kernel(float* scores, const float* lse_in, float* lse_out, RowArgs a) {
    declare_launch_limits<kThreads>();
    const int t = blockIdx.x;
    float* row = scores + (int64_t{blockIdx.y} * a.T + t) * a.T;
    const int first = first_key(a.starts, a.b, a.T, t, a.window);
    float row_lse;
    if (kFromScores) {
        OnlineSum local;
        for (int s = first + threadIdx.x; s <= t; s += blockDim.x) accumulate(local, row[s] * a.scale);
        const OnlineSum total = block_combine<kThreads>(local);
        row_lse = total.max + logf(total.sum);
        if (threadIdx.x == 0) lse_out[a.lse_index(t)] = row_lse;
    } else {
        row_lse = lse_in[a.lse_index(t)];
    }
    for (int s = threadIdx.x; s < a.T; s += blockDim.x)
        row[s] = s >= first && s <= t ? expf(row[s] * a.scale - row_lse) : 0.f;
}

// dp (chunk, T, T) holds dP = dO V^T; row t becomes dS = scale · P (dP - delta_t), delta_t the sum
// over the visible keys of P dP (0 elsewhere). probabilities (chunk, T, T): P.
__global__ void score_gradient_kernel(float* dp, const float* probabilities, RowArgs a) {
    declare_launch_limits<kThreads>();
    const int t = blockIdx.x;
    const int64_t offset = (int64_t{blockIdx.y} * a.T + t) * a.T;
    float* row = dp + offset;
    const float* p = probabilities + offset;
    const int first = first_key(a.starts, a.b, a.T, t, a.window);
    float part = 0.f;
    for (int s = first + threadIdx.x; s <= t; s += blockDim.x) part += p[s] * row[s];
    const float delta = block_reduce<kThreads>(part, 0.f, WarpSum{});
    for (int s = threadIdx.x; s < a.T; s += blockDim.x)
        row[s] = s >= first && s <= t ? p[s] * (row[s] - delta) * a.scale : 0.f;
}

// One fp32 operand of a product: its first matrix, transposed or not, leading dimension, the
// distance to the next matrix of the batch.
struct Operand {
    const float* data;
    bool transpose;
    int64_t ld, stride;
};

// A product cuBLASLt offers no algorithm for (describe_product's line): the pass stops, and the
// caller computes the op another way.
struct ProductRefused {
    std::string product;
};

// D (m,n) [+]= op(A) op(B) for `batch` matrices, in fp32 (cublaslt_matmul.h's column-major terms);
// throws ProductRefused when cuBLASLt has no algorithm for it.
void run_product(LtMatmulRunner& matmuls, Operand a, Operand b, float* d, int64_t ldd, int64_t stride_d,
                 int64_t m, int64_t n, int64_t k, int64_t batch, bool accumulate) {
    LtProduct product;
    product.a = a.data;
    product.transpose_a = a.transpose;
    product.lda = a.ld;
    product.stride_a = a.stride;
    product.b = b.data;
    product.transpose_b = b.transpose;
    product.ldb = b.ld;
    product.stride_b = b.stride;
    product.d = d;
    product.ldd = ldd;
    product.stride_d = stride_d;
    product.m = m;
    product.n = n;
    product.k = k;
    product.batch = static_cast<int>(batch);
    product.accumulate = accumulate;
    product.input_type = product.output_type = CUDA_R_32F;
    product.compute_type = CUBLAS_COMPUTE_32F;
    if (!matmuls.try_run(product)) throw ProductRefused{describe_product(product)};
}

// What every step of both passes reads: the packed rows of one sequence and where its (possibly
// rotated) q and k heads are.
struct Sequence {
    int64_t T, H, Hkv, row, q_width, square;
    int hd, group;
    const float* qkv;  // (T, row): this sequence's rows
    const float* qk;   // q head h at h·hd, k head g at (H + g)·hd of rows qk_ld apart
    int64_t qk_ld;

    const float* q(int64_t h) const { return qk + h * hd; }
    const float* k(int64_t g) const { return qk + (H + g) * hd; }
    const float* v(int64_t g) const { return qkv + (H + Hkv + g) * hd; }
};

Sequence sequence_of(const AttentionProductsContext& context, const AttentionProductsShape& shape,
                     const float* qkv, int64_t b) {
    Sequence s{};
    s.T = shape.T;
    s.H = shape.H;
    s.Hkv = shape.Hkv;
    s.hd = shape.head_dim;
    s.group = static_cast<int>(shape.H / shape.Hkv);
    s.row = (shape.H + 2 * shape.Hkv) * shape.head_dim;
    s.q_width = shape.H * shape.head_dim;
    s.square = shape.T * shape.T;
    s.qkv = qkv + b * shape.T * s.row;
    s.qk = s.qkv;
    s.qk_ld = s.row;
    if (context.rope != nullptr) {
        const int heads = static_cast<int>(shape.H + shape.Hkv);
        const int64_t pairs = shape.T * heads * (shape.head_dim / 2);
        auto* rotated = static_cast<float*>(
            context.scratch.get(ScratchSlot::attention_rotated,
                                static_cast<size_t>(shape.T * heads * shape.head_dim) * sizeof(float)));
        launch_kernel(rope_pairs_kernel<false>, blocks_for(pairs, kThreads), kThreads, 0, context.stream,
                      rotated, int64_t{heads} * shape.head_dim, s.qkv, s.row, static_cast<int>(shape.T),
                      heads, shape.head_dim, context.rope);
        s.qk = rotated;
        s.qk_ld = int64_t{heads} * shape.head_dim;
    }
    return s;
}

RowArgs row_args(const AttentionProductsContext& context, const Sequence& s, int64_t b, int j, int64_t g0) {
    return {b,
            static_cast<int>(s.T),
            static_cast<int>(s.H),
            s.group,
            j,
            g0,
            1.f / std::sqrt(static_cast<float>(s.hd)),
            context.starts,
            context.window};
}

// scores (heads, T, T) = Q K^T of query heads g·group + j and key heads g, g in [g0, g0 + heads).
void score_product(const AttentionProductsContext& context, const Sequence& s, int j, int64_t g0,
                   int64_t heads, float* scores) {
    run_product(context.matmuls, {s.k(g0), true, s.qk_ld, s.hd},
                {s.q(g0 * s.group + j), false, s.qk_ld, s.group * s.hd}, scores, s.T, s.square, s.T, s.T,
                s.hd, heads, false);
}

}  // namespace

int64_t attention_products_chunk_heads(int64_t T, int64_t Hkv, size_t bytes) {
    const size_t per_head = 2 * sizeof(float) * static_cast<size_t>(T) * static_cast<size_t>(T);
    return std::min<int64_t>(Hkv, static_cast<int64_t>(bytes / per_head));
}

namespace {

void products_forward(const AttentionProductsContext& context, const AttentionProductsShape& shape,
                      float* out, float* lse, const float* qkv) {
    const int64_t chunk = context.chunk_heads;
    const size_t square_bytes = static_cast<size_t>(shape.T * shape.T) * sizeof(float);
    auto* scores =
        static_cast<float*>(context.scratch.get(ScratchSlot::attention_scores, 2 * chunk * square_bytes));
    for (int64_t b = 0; b < shape.B; ++b) {
        const Sequence s = sequence_of(context, shape, qkv, b);
        float* out_b = out + b * s.T * s.q_width;
        for (int j = 0; j < s.group; ++j)
            for (int64_t g0 = 0; g0 < s.Hkv; g0 += chunk) {
                const int64_t heads = std::min(chunk, s.Hkv - g0);
                score_product(context, s, j, g0, heads, scores);
                launch_kernel(probabilities_kernel<true>,
                              dim3(static_cast<unsigned>(s.T), static_cast<unsigned>(heads)), kThreads, 0,
                              context.stream, scores, static_cast<const float*>(nullptr), lse,
                              row_args(context, s, b, j, g0));
                // out heads g·group + j (T, hd) = P V_g
                run_product(context.matmuls, {s.v(g0), false, s.row, s.hd}, {scores, false, s.T, s.square},
                            out_b + (g0 * s.group + j) * s.hd, s.q_width, s.group * s.hd, s.hd, s.T, s.T,
                            heads, false);
            }
    }
}

void products_backward(const AttentionProductsContext& context, const AttentionProductsShape& shape,
                       float* dqkv, const float* dout, const float* qkv, const float* lse) {
    const int64_t chunk = context.chunk_heads;
    const size_t square_bytes = static_cast<size_t>(shape.T * shape.T) * sizeof(float);
    auto* probabilities =
        static_cast<float*>(context.scratch.get(ScratchSlot::attention_scores, 2 * chunk * square_bytes));
    float* score_gradients = probabilities + chunk * shape.T * shape.T;
    for (int64_t b = 0; b < shape.B; ++b) {
        const Sequence s = sequence_of(context, shape, qkv, b);
        const float* dout_b = dout + b * s.T * s.q_width;
        float* dqkv_b = dqkv + b * s.T * s.row;
        for (int j = 0; j < s.group; ++j)
            for (int64_t g0 = 0; g0 < s.Hkv; g0 += chunk) {
                const int64_t heads = std::min(chunk, s.Hkv - g0);
                const int64_t h0 = g0 * s.group + j;
                const dim3 rows(static_cast<unsigned>(s.T), static_cast<unsigned>(heads));
                const RowArgs args = row_args(context, s, b, j, g0);
                score_product(context, s, j, g0, heads, probabilities);
                launch_kernel(probabilities_kernel<false>, rows, kThreads, 0, context.stream, probabilities,
                              lse, static_cast<float*>(nullptr), args);
                // dP (T,T) = dO_h V_g^T
                run_product(context.matmuls, {s.v(g0), true, s.row, s.hd},
                            {dout_b + h0 * s.hd, false, s.q_width, s.group * s.hd}, score_gradients, s.T,
                            s.square, s.T, s.T, s.hd, heads, false);
                launch_kernel(score_gradient_kernel, rows, kThreads, 0, context.stream, score_gradients,
                              static_cast<const float*>(probabilities), args);
                const bool add = j > 0;  // a key/value head's second and later query heads
                // dV_g (T, hd) += P^T dO_h
                run_product(context.matmuls, {dout_b + h0 * s.hd, false, s.q_width, s.group * s.hd},
                            {probabilities, true, s.T, s.square}, dqkv_b + (s.H + s.Hkv + g0) * s.hd, s.row,
                            s.hd, s.hd, s.T, s.T, heads, add);
                // dQ_h (T, hd) = dS K_g
                run_product(context.matmuls, {s.k(g0), false, s.qk_ld, s.hd},
                            {score_gradients, false, s.T, s.square}, dqkv_b + h0 * s.hd, s.row,
                            s.group * s.hd, s.hd, s.T, s.T, heads, false);
                // dK_g (T, hd) += dS^T Q_h
                run_product(context.matmuls, {s.q(h0), false, s.qk_ld, s.group * s.hd},
                            {score_gradients, true, s.T, s.square}, dqkv_b + (s.H + g0) * s.hd, s.row, s.hd,
                            s.hd, s.T, s.T, heads, add);
            }
        if (context.rope != nullptr) {
            const int heads = static_cast<int>(s.H + s.Hkv);
            launch_kernel(rope_pairs_kernel<true>, blocks_for(s.T * heads * (s.hd / 2), kThreads), kThreads,
                          0, context.stream, dqkv_b, s.row, static_cast<const float*>(dqkv_b), s.row,
                          static_cast<int>(s.T), heads, s.hd, context.rope);
        }
    }
}

}  // namespace

std::string attention_products_forward(const AttentionProductsContext& context,
                                       const AttentionProductsShape& shape, float* out, float* lse,
                                       const float* qkv) {
    try {
        products_forward(context, shape, out, lse, qkv);
        return {};
    } catch (const ProductRefused& refused) {
        return refused.product;
    }
}

std::string attention_products_backward(const AttentionProductsContext& context,
                                        const AttentionProductsShape& shape, float* dqkv, const float* dout,
                                        const float* qkv, const float* lse) {
    try {
        products_backward(context, shape, dqkv, dout, qkv, lse);
        return {};
    } catch (const ProductRefused& refused) {
        return refused.product;
    }
}

}  // namespace mixgpt::cuda
