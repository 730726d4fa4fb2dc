// The CPU backend gives the same bits whatever the thread count: every op, at
// shapes large enough that the matmul tiles and the OpenMP loops split the work.
#include <gtest/gtest.h>
#include <omp.h>

#include <functional>

#include "kernels/ops.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using test::HostTensor;
using test::IntTensor;

// Runs `op` (which returns its outputs from fixed inputs) with 1 thread, with one per processor
// and with 3 (an odd count, so partitions differ from the usual ones); the outputs must match.
void expect_thread_independent(const std::function<std::vector<std::vector<double>>()>& op,
                               const char* what) {
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const auto single = op();
    for (int count : {omp_get_num_procs(), 3}) {
        omp_set_num_threads(count);
        const auto several = op();
        ASSERT_EQ(single.size(), several.size());
        for (size_t i = 0; i < single.size(); ++i)
            EXPECT_TRUE(single[i] == several[i])
                << what << " output " << i << " with " << count << " threads";
    }
    omp_set_num_threads(threads);
}

constexpr int B = 4, T = 64, C = 128, H = 4, N = B * T, Vp = 512;

TEST(CpuDeterminism, MatrixProducts) {
    auto backend = make_backend({"cpu", 0, Precision::fp32, 0});
    const HostTensor inp(test::random_normal(N * C, 1), DType::f32, {N, C});
    const HostTensor weight(test::random_normal(3 * C * C, 2), DType::f32, {3 * C, C});
    const HostTensor bias(test::random_normal(3 * C, 3), DType::f32, {3 * C});
    const HostTensor dout(test::random_normal(N * 3 * C, 4), DType::f32, {N, 3 * C});
    expect_thread_independent(
        [&] {
            HostTensor out(DType::f32, {N, 3 * C}), pre(DType::f32, {N, 3 * C}), dinp(DType::f32, {N, C});
            HostTensor dweight(DType::f32, {3 * C, C}), dbias(DType::f32, {3 * C});
            backend->matmul_forward(out.view(), pre.view(), inp.view(), weight.view(), bias.view(),
                                    MatmulEpilogue::bias_gelu);
            backend->matmul_backward_input(dinp.view(), dout.view(), weight.view(), false);
            backend->matmul_backward_weight(dweight.view(), dbias.view(), dout.view(), inp.view());
            return std::vector<std::vector<double>>{out.values(), dinp.values(), dweight.values(),
                                                    dbias.values()};
        },
        "matmul");
}

TEST(CpuDeterminism, NormsEmbeddingAttentionClassifier) {
    auto backend = make_backend({"cpu", 0, Precision::fp32, 0});
    const HostTensor x(test::random_normal(N * C, 10), DType::f32, {N, C});
    const HostTensor gamma(test::random_normal(C, 11), DType::f32, {C}),
        beta(test::random_normal(C, 12), DType::f32, {C});
    const HostTensor dy(test::random_normal(N * C, 13), DType::f32, {N, C});
    const HostTensor qkv(test::random_normal(N * 3 * C, 14), DType::f32, {B, T, 3 * C});
    const HostTensor table(test::random_normal(Vp * C, 15), DType::f32, {Vp, C});
    const HostTensor positions(test::random_normal(T * C, 16), DType::f32, {T, C});
    const IntTensor tokens(test::random_tokens(N, 500, 17), {B, T});
    const IntTensor targets(test::random_tokens(N, 500, 18), {N});
    const std::vector<double> logit_values = test::random_normal(N * Vp, 19);
    expect_thread_independent(
        [&] {
            HostTensor out(DType::f32, {N, C}), mean(DType::f32, {N}), rstd(DType::f32, {N});
            HostTensor dx(DType::f32, {N, C}), dgamma(DType::f32, {C}), dbeta(DType::f32, {C});
            backend->layernorm_forward(out.view(), mean.view(), rstd.view(), x.view(), gamma.view(),
                                       beta.view());
            backend->layernorm_backward(dx.view(), dgamma.view(), dbeta.view(), dy.view(), x.view(),
                                        gamma.view(), mean.view(), rstd.view());
            HostTensor embedded(DType::f32, {B, T, C}), dtable(DType::f32, {Vp, C}),
                dpositions(DType::f32, {T, C});
            backend->embedding_forward(embedded.view(), tokens.view(), table.view(), positions.view(), TensorView());
            backend->embedding_backward(dtable.view(), dpositions.view(),
                                        TensorView(dy.view().data, DType::f32, {B, T, C}), tokens.view(),
                                        TensorView());
            HostTensor attended(DType::f32, {B, T, C}), lse(DType::f32, {B, H, T}),
                dqkv(DType::f32, {B, T, 3 * C});
            backend->attention_forward(attended.view(), lse.view(), qkv.view(), multi_head_attention(H));
            backend->attention_backward(dqkv.view(), TensorView(dy.view().data, DType::f32, {B, T, C}),
                                        qkv.view(), lse.view(), multi_head_attention(H));
            HostTensor logits(logit_values, DType::f32, {N, Vp}), losses(DType::f32, {N});
            backend->classifier(losses.view(), TensorView(), logits.view(), targets.view(), {500}, true,
                                0.01f, nullptr);
            StepStatus status;
            backend->grad_norm_squared(&status, TensorView(logits.view().data, DType::f32, {N * Vp}));
            return std::vector<std::vector<double>>{
                out.values(),      mean.values(),   rstd.values(),
                dx.values(),       dgamma.values(), dbeta.values(),
                embedded.values(), dtable.values(), dpositions.values(),
                attended.values(), lse.values(),    dqkv.values(),
                logits.values(),   losses.values(), {status.grad_norm_squared}};
        },
        "layer ops");
}

// The ops of Llama-style blocks, in bf16 (storage rounding included): RMSNorm, SwiGLU, and
// attention with 2 query heads per key/value head and RoPE (the backward sums each group).
TEST(CpuDeterminism, RmsNormSwiGluGroupedRopeAttention) {
    auto backend = make_backend({"cpu", 0, Precision::bf16, 0});
    const int F = 160, Hkv = 2, hd = C / H, width = (H + 2 * Hkv) * hd;
    const AttentionParams params{H, Hkv, 10000.f};
    const HostTensor x(test::random_normal(N * C, 20), DType::bf16, {N, C});
    const HostTensor gamma(test::random_normal(C, 21), DType::bf16, {C});
    const HostTensor dy(test::random_normal(N * C, 22), DType::bf16, {N, C});
    const HostTensor gate_up(test::random_normal(N * 2 * F, 23, 2.0), DType::bf16, {N, 2 * F});
    const HostTensor dh(test::random_normal(N * F, 24), DType::bf16, {N, F});
    const HostTensor qkv(test::random_normal(N * width, 25), DType::bf16, {B, T, width});
    expect_thread_independent(
        [&] {
            HostTensor out(DType::bf16, {N, C}), rstd(DType::f32, {N});
            HostTensor dx(DType::bf16, {N, C}), dgamma(DType::f32, {C});
            backend->rmsnorm_forward(out.view(), rstd.view(), x.view(), gamma.view(), 1e-5f);
            backend->rmsnorm_backward(dx.view(), dgamma.view(), dy.view(), x.view(), gamma.view(),
                                      rstd.view());
            HostTensor h(DType::bf16, {N, F}), dgate_up(DType::bf16, {N, 2 * F});
            backend->swiglu_forward(h.view(), gate_up.view());
            backend->swiglu_backward(dgate_up.view(), dh.view(), gate_up.view());
            HostTensor attended(DType::bf16, {B, T, C}), lse(DType::f32, {B, H, T}),
                dqkv(DType::bf16, {B, T, width});
            backend->attention_forward(attended.view(), lse.view(), qkv.view(), params);
            backend->attention_backward(dqkv.view(), TensorView(dy.view().data, DType::bf16, {B, T, C}),
                                        qkv.view(), lse.view(), params);
            return std::vector<std::vector<double>>{out.values(),      rstd.values(), dx.values(),
                                                    dgamma.values(),   h.values(),    dgate_up.values(),
                                                    attended.values(), lse.values(),  dqkv.values()};
        },
        "Llama-style ops");
}

}  // namespace
}  // namespace mixgpt
