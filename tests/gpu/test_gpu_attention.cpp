// CUDA attention against the CPU backend, per precision: forward (out and log-sum-exp),
// backward (dqkv), and the KV-cached forward of inference. In bf16 and fp16, head dimensions 16
// and 80 take the simple kernel's two register layouts and 64 the flash kernels; fp32 and tf32 take
// the cuBLASLt products (all through the backend's dispatch); T = 45 leaves partial tiles of
// queries and keys.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinTensor;
using test::random_normal;

struct Heads {
    int n_head;
    int head_dim;
};

class GpuAttention : public gpu_test::GpuPrecisionTest {
protected:
    static constexpr int B = 2, T = 45;
    static constexpr Heads kHeads[] = {{3, 16}, {2, 80}, {2, 64}};
};

TEST_P(GpuAttention, ForwardAndBackward) {
    for (const Heads heads : kHeads) {
        const int H = heads.n_head, C = H * heads.head_dim;
        SCOPED_TRACE("head_dim = " + std::to_string(heads.head_dim));
        // Spread scores (std 2 for q and k) so the softmax is far from uniform.
        const TwinTensor qkv = act_tensor(random_normal(B * T * 3 * C, seed(1), 2.0), {B, T, 3 * C});
        const TwinTensor out = poisoned(act(), {B, T, C}), lse = poisoned(DType::f32, {B, H, T});
        cpu->attention_forward(out.cpu(), lse.cpu(), qkv.cpu(), multi_head_attention(H));
        gpu->attention_forward(out.gpu(), lse.gpu(), qkv.gpu(), multi_head_attention(H));
        const F64AttentionForward ref = f64_attention_forward(qkv.cpu_values(), B, T, C, H);
        expect_close(out, ref.out, "out");
        expect_close(lse, ref.lse, "lse");

        // The backward reads the forward's out and lse: each backend gets its own.
        const TwinTensor dout = act_tensor(random_normal(B * T * C, seed(2)), {B, T, C});
        const TwinTensor dqkv = poisoned(act(), {B, T, 3 * C});
        cpu->attention_backward(dqkv.cpu(), dout.cpu(), qkv.cpu(), lse.cpu(), multi_head_attention(H));
        gpu->attention_backward(dqkv.gpu(), dout.gpu(), qkv.gpu(), lse.gpu(), multi_head_attention(H));
        expect_close(dqkv, f64_attention_backward(dout.cpu_values(), qkv.cpu_values(), B, T, C, H), "dqkv");
    }
}

// A prefill of 7 positions, then single positions and a chunk of 3 (causal within the chunk),
// against the full causal forward of the same rows: the cache is written and read at the
// right places.
TEST_P(GpuAttention, CachedForwardMatchesTheFullForward) {
    const int max_T = 16;
    for (const Heads heads : kHeads) {
        const int H = heads.n_head, C = H * heads.head_dim;
        SCOPED_TRACE("head_dim = " + std::to_string(heads.head_dim));
        const std::vector<double> all = random_normal(B * max_T * 3 * C, seed(3), 2.0);
        const std::vector<double> full_ref =
            f64_attention_forward(test::rounded(all, act()), B, max_T, C, H).out;
        const TwinTensor k_cache = poisoned(act(), {B, max_T, C}), v_cache = poisoned(act(), {B, max_T, C});
        int position = 0;
        for (int count : {7, 1, 3, 1}) {
            SCOPED_TRACE("positions " + std::to_string(position) + ".." +
                         std::to_string(position + count - 1));
            std::vector<double> chunk, chunk_ref;
            for (int b = 0; b < B; ++b)
                for (int t = position; t < position + count; ++t) {
                    const auto row = all.begin() + (int64_t{b} * max_T + t) * 3 * C;
                    chunk.insert(chunk.end(), row, row + 3 * C);
                    const auto ref_row = full_ref.begin() + (int64_t{b} * max_T + t) * C;
                    chunk_ref.insert(chunk_ref.end(), ref_row, ref_row + C);
                }
            const TwinTensor qkv = act_tensor(chunk, {B, count, 3 * C});
            const TwinTensor out = poisoned(act(), {B, count, C});
            cpu->attention_forward_cached(out.cpu(), qkv.cpu(), k_cache.cpu(), v_cache.cpu(), position,
                                          multi_head_attention(H));
            gpu->attention_forward_cached(out.gpu(), qkv.gpu(), k_cache.gpu(), v_cache.gpu(), position,
                                          multi_head_attention(H));
            expect_close(out, chunk_ref, "out");
            position += count;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuAttention,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
