// CUDA attention with grouped key/value heads and RoPE against the CPU backend, per precision,
// through the backend's dispatch: fp32 and tf32 take the cuBLASLt products at every head dimension,
// bf16 and fp16 the flash kernels at 64 and 128 and the simple ones at 16. Forward (out, lse),
// backward (dq, dk, dv judged apart: dk and dv sum each key/value head's group), the flash
// backward's determinism, and the KV-cached forward with a cache of Hkv heads against the full
// forward. References: test_cpu_support.h's stored_rope_attention_*.
#include <gtest/gtest.h>

#include <string>

#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinTensor;
using test::random_normal;

struct GroupedCase {
    AttentionParams params;
    int head_dim;
    int length;  // T: 70 leaves partial flash tiles (queries 128 or 64, keys 64 or 32 per tile)
};

constexpr GroupedCase kCases[] = {
    {{4, 2, 10000.f}, 16, 40},  // 2 query heads per key/value head, Llama's theta
    {{3, 1, 500.f}, 64, 70},    // multi-query: 3 query heads share one key/value head
    {{4, 2, 10000.f}, 128, 70},
    {{2, 1, 0.f}, 64, 70},  // grouped, no RoPE
};

std::string describe(const GroupedCase& c) {
    return "H " + std::to_string(c.params.n_head) + ", Hkv " + std::to_string(c.params.n_kv_head) + ", hd " +
           std::to_string(c.head_dim) + ", theta " + std::to_string(c.params.rope_theta);
}

// Columns [begin, end) of each row of a (rows, width) tensor: the q, k or v heads of qkv.
std::vector<double> columns(const std::vector<double>& values, int64_t width, int64_t begin, int64_t end) {
    std::vector<double> result;
    for (size_t row = 0; row < values.size() / static_cast<size_t>(width); ++row) {
        const auto first = values.begin() + static_cast<std::ptrdiff_t>(row * width);
        result.insert(result.end(), first + begin, first + end);
    }
    return result;
}

class GpuGroupedRopeAttention : public gpu_test::GpuPrecisionTest {
protected:
    static constexpr int B = 2;
};

TEST_P(GpuGroupedRopeAttention, ForwardAndBackward) {
    for (const GroupedCase& c : kCases) {
        SCOPED_TRACE(describe(c));
        const int T = c.length, hd = c.head_dim, H = c.params.n_head, Hkv = c.params.n_kv_head;
        const int width = (H + 2 * Hkv) * hd;
        const TwinTensor qkv = act_tensor(random_normal(B * T * width, seed(1), 1.5), {B, T, width});
        const TwinTensor out = poisoned(act(), {B, T, H * hd}), lse = poisoned(DType::f32, {B, H, T});
        cpu->attention_forward(out.cpu(), lse.cpu(), qkv.cpu(), c.params);
        gpu->attention_forward(out.gpu(), lse.gpu(), qkv.gpu(), c.params);
        const F64AttentionForward ref =
            test::stored_rope_attention_forward(qkv.cpu_values(), B, T, hd, c.params, act());
        expect_close(out, ref.out, "out");
        expect_close(lse, ref.lse, "lse");

        // The backward reads the forward's lse: each backend its own.
        const TwinTensor dout = act_tensor(random_normal(B * T * H * hd, seed(2)), {B, T, H * hd});
        const TwinTensor dqkv = poisoned(act(), {B, T, width});
        cpu->attention_backward(dqkv.cpu(), dout.cpu(), qkv.cpu(), lse.cpu(), c.params);
        gpu->attention_backward(dqkv.gpu(), dout.gpu(), qkv.gpu(), lse.gpu(), c.params);
        const std::vector<double> ref_dqkv = test::stored_rope_attention_backward(
            dout.cpu_values(), qkv.cpu_values(), B, T, hd, c.params, act());
        const std::vector<double> gpu_dqkv = dqkv.gpu_values(), cpu_dqkv = dqkv.cpu_values();
        const int64_t bounds[] = {0, int64_t{H} * hd, int64_t{H + Hkv} * hd, width};
        const char* names[] = {"dq", "dk", "dv"};
        for (int part = 0; part < 3; ++part)
            gpu_test::expect_matches_cpu(columns(gpu_dqkv, width, bounds[part], bounds[part + 1]),
                                         columns(cpu_dqkv, width, bounds[part], bounds[part + 1]),
                                         columns(ref_dqkv, width, bounds[part], bounds[part + 1]), act(),
                                         GetParam(), names[part]);

        // The group's dk and dv come from one block walking its query heads in order: no atomics.
        if (c.head_dim != 64) continue;
        const TwinTensor again = poisoned(act(), {B, T, width});
        gpu->attention_backward(again.gpu(), dout.gpu(), qkv.gpu(), lse.gpu(), c.params);
        EXPECT_EQ(again.gpu_values(), gpu_dqkv) << "dqkv run to run";
    }
}

// A prefill of 7 positions, then single positions and a chunk of 3, against the full forward of
// the same rows: the keys are written rotated at their positions into a cache of Hkv heads.
TEST_P(GpuGroupedRopeAttention, CachedForwardMatchesTheFullForward) {
    const int max_T = 16;
    for (const GroupedCase& c : kCases) {
        SCOPED_TRACE(describe(c));
        const int hd = c.head_dim, H = c.params.n_head, Hkv = c.params.n_kv_head, width = (H + 2 * Hkv) * hd;
        const std::vector<double> all = test::rounded(random_normal(B * max_T * width, seed(3), 1.5), act());
        const std::vector<double> full_ref =
            test::stored_rope_attention_forward(all, B, max_T, hd, c.params, act()).out;
        const TwinTensor k_cache = poisoned(act(), {B, max_T, Hkv * hd}),
                         v_cache = poisoned(act(), {B, max_T, Hkv * hd});
        int position = 0;
        for (int count : {7, 1, 3, 1}) {
            SCOPED_TRACE("positions " + std::to_string(position) + ".." +
                         std::to_string(position + count - 1));
            std::vector<double> chunk, chunk_ref;
            for (int b = 0; b < B; ++b)
                for (int t = position; t < position + count; ++t) {
                    const auto row = all.begin() + (int64_t{b} * max_T + t) * width;
                    chunk.insert(chunk.end(), row, row + width);
                    const auto ref_row = full_ref.begin() + (int64_t{b} * max_T + t) * H * hd;
                    chunk_ref.insert(chunk_ref.end(), ref_row, ref_row + H * hd);
                }
            const TwinTensor qkv = act_tensor(chunk, {B, count, width});
            const TwinTensor out = poisoned(act(), {B, count, H * hd});
            cpu->attention_forward_cached(out.cpu(), qkv.cpu(), k_cache.cpu(), v_cache.cpu(), position,
                                          c.params);
            gpu->attention_forward_cached(out.gpu(), qkv.gpu(), k_cache.gpu(), v_cache.gpu(), position,
                                          c.params);
            expect_close(out, chunk_ref, "out");
            position += count;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuGroupedRopeAttention,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
