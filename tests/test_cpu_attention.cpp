// CPU causal attention against the float64 reference, and the KV-cached form
// against the full one: GPT-2's multi-head attention, then grouped key/value heads with RoPE.
#include <gtest/gtest.h>

#include <string>

#include "kernels/ops.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using test::HostTensor;

class CpuAttention : public ::testing::TestWithParam<Precision> {
protected:
    DType act() const { return activation_dtype(GetParam()); }
    static void expect_close(const HostTensor& out, const std::vector<double>& reference, const char* what) {
        const double error = relative_norm_error(out.values(), reference);
        EXPECT_LE(error, test::tolerance_for(reference, out.view().dtype)) << what;
    }

    static constexpr int B = 2, T = 7, C = 16, H = 2;
    std::unique_ptr<Backend> backend = make_backend({"cpu", 0, GetParam(), 0});
    // Scaled scores spread over a few units, so the softmax is far from uniform.
    HostTensor qkv{test::random_normal(B * T * 3 * C, 80, 1.5), act(), {B, T, 3 * C}};
};

TEST_P(CpuAttention, ForwardMatchesReference) {
    HostTensor out(act(), {B, T, C}), lse(DType::f32, {B, H, T});
    backend->attention_forward(out.view(), lse.view(), qkv.view(), multi_head_attention(H));
    const F64AttentionForward ref = f64_attention_forward(qkv.values(), B, T, C, H);
    expect_close(out, ref.out, "out");
    expect_close(lse, ref.lse, "lse");
}

TEST_P(CpuAttention, BackwardMatchesReference) {
    HostTensor out(act(), {B, T, C}), lse(DType::f32, {B, H, T});
    backend->attention_forward(out.view(), lse.view(), qkv.view(), multi_head_attention(H));
    const HostTensor dout(test::random_normal(B * T * C, 81), act(), {B, T, C});
    HostTensor dqkv(test::random_normal(B * T * 3 * C, 82), act(), {B, T, 3 * C});  // overwritten
    backend->attention_backward(dqkv.view(), dout.view(), qkv.view(), lse.view(), multi_head_attention(H));
    expect_close(dqkv, f64_attention_backward(dout.values(), qkv.values(), B, T, C, H), "dqkv");
}

TEST_P(CpuAttention, CachedDecodingEqualsFullAttention) {
    HostTensor full(act(), {B, T, C}), lse(DType::f32, {B, H, T});
    backend->attention_forward(full.view(), lse.view(), qkv.view(), multi_head_attention(H));
    const int max_T = T + 3;
    HostTensor k_cache(act(), {B, max_T, C}), v_cache(act(), {B, max_T, C});
    const std::vector<double> all = qkv.values(), expected = full.values();
    // A prefill of 3 positions, then one position at a time.
    int position = 0;
    for (int count : {3, 1, 1, 1, 1}) {
        std::vector<double> chunk;
        for (int b = 0; b < B; ++b)
            for (int t = position; t < position + count; ++t)
                chunk.insert(chunk.end(), all.begin() + (b * T + t) * 3 * C,
                             all.begin() + (b * T + t + 1) * 3 * C);
        const HostTensor new_qkv(chunk, act(), {B, count, 3 * C});
        HostTensor out(act(), {B, count, C});
        backend->attention_forward_cached(out.view(), new_qkv.view(), k_cache.view(), v_cache.view(),
                                          position, multi_head_attention(H));
        const std::vector<double> got = out.values();
        for (int b = 0; b < B; ++b)
            for (int t = 0; t < count; ++t)
                for (int c = 0; c < C; ++c)
                    ASSERT_EQ(got[static_cast<size_t>((b * count + t) * C + c)],
                              expected[static_cast<size_t>((b * T + position + t) * C + c)])
                        << "b " << b << " position " << position + t;
        position += count;
    }
    HostTensor out(act(), {B, 1, C});
    const HostTensor one(std::vector<double>(B * 3 * C, 0.0), act(), {B, 1, 3 * C});
    EXPECT_THROW(backend->attention_forward_cached(out.view(), one.view(), k_cache.view(), v_cache.view(),
                                                   max_T, multi_head_attention(H)),
                 Error);
}

INSTANTIATE_TEST_SUITE_P(Precisions, CpuAttention,
                         ::testing::Values(Precision::fp32, Precision::bf16, Precision::fp16),
                         [](const auto& info) { return std::string(precision_name(info.param)); });

// Grouped key/value heads and RoPE (kernels/ops.def): against the float64 reference of the stored
// rotation (test_cpu_support.h), and the KV-cached form against the full one, bit for bit.
class CpuGroupedRopeAttention : public ::testing::TestWithParam<Precision> {
protected:
    DType act() const { return activation_dtype(GetParam()); }
    static void expect_close(const HostTensor& out, const std::vector<double>& reference, const char* what) {
        EXPECT_LE(relative_norm_error(out.values(), reference),
                  test::tolerance_for(reference, out.view().dtype))
            << what;
    }
    static std::string describe(const AttentionParams& params) {
        return "H " + std::to_string(params.n_head) + ", Hkv " + std::to_string(params.n_kv_head) +
               ", theta " + std::to_string(params.rope_theta);
    }

    static constexpr int B = 2, T = 7, hd = 8;
    // GQA without RoPE, multi-query with RoPE, multi-head with RoPE, 3 query heads per key/value head;
    // theta 100 turns every pair by a sizeable angle over 7 positions, 10000 (Llama's) the first ones.
    static constexpr AttentionParams kCases[] = {{4, 2, 0.f}, {4, 1, 100.f}, {2, 2, 100.f}, {6, 2, 10000.f}};
    std::unique_ptr<Backend> backend = make_backend({"cpu", 0, GetParam(), 0});
};

TEST_P(CpuGroupedRopeAttention, ForwardAndBackwardMatchTheReference) {
    for (const AttentionParams& params : kCases) {
        SCOPED_TRACE(describe(params));
        const int H = params.n_head, width = (H + 2 * params.n_kv_head) * hd;
        const HostTensor qkv(test::random_normal(B * T * width, 83, 1.5), act(), {B, T, width});
        HostTensor out(act(), {B, T, H * hd}), lse(DType::f32, {B, H, T});
        backend->attention_forward(out.view(), lse.view(), qkv.view(), params);
        const F64AttentionForward ref =
            test::stored_rope_attention_forward(qkv.values(), B, T, hd, params, act());
        expect_close(out, ref.out, "out");
        expect_close(lse, ref.lse, "lse");

        const HostTensor dout(test::random_normal(B * T * H * hd, 84), act(), {B, T, H * hd});
        HostTensor dqkv(test::random_normal(B * T * width, 85), act(), {B, T, width});  // overwritten
        backend->attention_backward(dqkv.view(), dout.view(), qkv.view(), lse.view(), params);
        expect_close(
            dqkv, test::stored_rope_attention_backward(dout.values(), qkv.values(), B, T, hd, params, act()),
            "dqkv");
    }
}

TEST_P(CpuGroupedRopeAttention, CachedDecodingEqualsFullAttention) {
    for (const AttentionParams& params : kCases) {
        SCOPED_TRACE(describe(params));
        const int H = params.n_head, Hkv = params.n_kv_head, width = (H + 2 * Hkv) * hd, max_T = T + 2;
        const HostTensor qkv(test::random_normal(B * T * width, 86, 1.5), act(), {B, T, width});
        HostTensor full(act(), {B, T, H * hd}), lse(DType::f32, {B, H, T});
        backend->attention_forward(full.view(), lse.view(), qkv.view(), params);
        HostTensor k_cache(act(), {B, max_T, Hkv * hd}), v_cache(act(), {B, max_T, Hkv * hd});
        const std::vector<double> all = qkv.values(), expected = full.values();
        int position = 0;
        for (int count : {4, 1, 2}) {
            std::vector<double> chunk;
            for (int b = 0; b < B; ++b)
                chunk.insert(chunk.end(), all.begin() + (b * T + position) * width,
                             all.begin() + (b * T + position + count) * width);
            const HostTensor new_qkv(chunk, act(), {B, count, width});
            HostTensor out(act(), {B, count, H * hd});
            backend->attention_forward_cached(out.view(), new_qkv.view(), k_cache.view(), v_cache.view(),
                                              position, params);
            const std::vector<double> got = out.values();
            for (int b = 0; b < B; ++b)
                for (int i = 0; i < count * H * hd; ++i)
                    ASSERT_EQ(got[static_cast<size_t>(b * count * H * hd + i)],
                              expected[static_cast<size_t>((b * T + position) * H * hd + i)])
                        << "b " << b << " position " << position + i / (H * hd);
            position += count;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Precisions, CpuGroupedRopeAttention,
                         ::testing::Values(Precision::fp32, Precision::bf16, Precision::fp16),
                         [](const auto& info) { return std::string(precision_name(info.param)); });

}  // namespace
}  // namespace mixgpt
