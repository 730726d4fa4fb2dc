// The document mask (--attention-mask document) and the sliding window (--window) on the CUDA
// backend against the CPU backend: the bounds ops equal, bit for bit; attention forward and
// backward under each mask and both, through the backend's dispatch (bf16 and fp16 at head
// dimensions 64 and 128: the flash kernels, which skip the masked tiles; fp32 and tf32: the cuBLASLt
// products; head dimension 16 in bf16 and fp16: the simple kernels), judged by the 2x rule against the float64 reference that
// masks by document number and distance; the KV-cached forward with the decoding starts and a window.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinIndices;
using gpu_test::TwinTensor;

constexpr int32_t kSeparator = 3;
constexpr int B = 2;

struct MaskCase {
    AttentionParams params;
    int head_dim;
    int length;
};

// Flash tiles: forward 128 (hd 64) or 64 (hd 128) queries by 64 or 32 keys; backward 64 by 64 or 32.
constexpr MaskCase kCases[] = {
    {{2, 2, 0.f}, 64, 200},
    {{4, 2, 10000.f}, 128, 150},
    {{2, 1, 500.f}, 16, 70},
};

// Row 0: one-token documents at 0, 1 and 2, then documents ending at T/3, 2T/3 + 5 and T - 1 (tiles
// start and end inside documents); row 1: one document, no separator.
std::vector<int32_t> document_tokens(int T, uint32_t seed) {
    std::vector<int32_t> tokens = test::random_tokens(static_cast<size_t>(B) * T, 100, seed);
    for (int32_t& token : tokens)
        if (token == kSeparator) token = kSeparator + 1;
    for (int t : {0, 1, 2, T / 3, 2 * T / 3 + 5, T - 1}) tokens[static_cast<size_t>(t)] = kSeparator;
    return tokens;
}

std::vector<int32_t> ints(Backend& backend, const TensorView& view) {
    std::vector<int32_t> values(static_cast<size_t>(view.numel()));
    backend.copy_to_host(values.data(), view.data, values.size() * sizeof(int32_t));
    return values;
}

// The masks: the document mask, a sliding window of 37 (not a multiple of any tile), and both.
struct MaskVariant {
    const char* name;
    bool documents;
    int window;
};
constexpr MaskVariant kMasks[] = {{"documents", true, 0}, {"window 37", false, 37}, {"documents, window 37", true, 37}};

std::string describe(const MaskCase& c) {
    return "H " + std::to_string(c.params.n_head) + ", Hkv " + std::to_string(c.params.n_kv_head) + ", hd " +
           std::to_string(c.head_dim) + ", T " + std::to_string(c.length);
}

class GpuDocumentMask : public gpu_test::GpuPrecisionTest {
protected:
    // The bounds of `tokens` (B,T) on both backends.
    struct Bounds {
        TwinIndices starts, ends;
    };
    Bounds bounds(const TwinIndices& tokens, int T) const {
        const std::vector<int32_t> zeros(static_cast<size_t>(B) * T, -1);
        Bounds result{TwinIndices(*cpu, *gpu, zeros, {B, T}), TwinIndices(*cpu, *gpu, zeros, {B, T})};
        cpu->document_bounds(result.starts.cpu(), result.ends.cpu(), tokens.cpu(), kSeparator);
        gpu->document_bounds(result.starts.gpu(), result.ends.gpu(), tokens.gpu(), kSeparator);
        return result;
    }
    // params under `mask`: its window, and with the document mask the bounds of one backend.
    static AttentionParams masked(AttentionParams params, const MaskVariant& mask, const Bounds& b, bool on_gpu) {
        params.window = mask.window;
        if (!mask.documents) return params;
        params.document_starts = on_gpu ? b.starts.gpu() : b.starts.cpu();
        params.document_ends = on_gpu ? b.ends.gpu() : b.ends.cpu();
        return params;
    }
};

TEST_P(GpuDocumentMask, BoundsOpsMatchTheCpuBitForBit) {
    for (const int T : {70, 1000}) {  // 1000: chunks of 4 positions per thread of the block
        const TwinIndices tokens(*cpu, *gpu, document_tokens(T, seed(1)), {B, T});
        const Bounds b = bounds(tokens, T);
        EXPECT_EQ(ints(*gpu, b.starts.gpu()), ints(*cpu, b.starts.cpu()));
        EXPECT_EQ(ints(*gpu, b.ends.gpu()), ints(*cpu, b.ends.cpu()));
    }
}

TEST_P(GpuDocumentMask, AttentionWithinTwiceTheCpuError) {
    for (const MaskVariant& mask : kMasks)
        for (const MaskCase& c : kCases) {
            SCOPED_TRACE(std::string(mask.name) + ", " + describe(c));
            const int T = c.length, hd = c.head_dim, H = c.params.n_head, Hkv = c.params.n_kv_head;
            const int width = (H + 2 * Hkv) * hd;
            const std::vector<int32_t> token_values = document_tokens(T, seed(2));
            const std::vector<int> documents =
                mask.documents ? f64_document_numbers(token_values, B, T, kSeparator) : std::vector<int>();
            AttentionParams reference_params = c.params;
            reference_params.window = mask.window;
            const TwinIndices tokens(*cpu, *gpu, token_values, {B, T});
            const Bounds b = bounds(tokens, T);
            const TwinTensor qkv = act_tensor(test::random_normal(B * T * width, seed(3), 1.5), {B, T, width});
            const TwinTensor out = poisoned(act(), {B, T, H * hd}), lse = poisoned(DType::f32, {B, H, T});
            cpu->attention_forward(out.cpu(), lse.cpu(), qkv.cpu(), masked(c.params, mask, b, false));
            gpu->attention_forward(out.gpu(), lse.gpu(), qkv.gpu(), masked(c.params, mask, b, true));
            const F64AttentionForward ref = test::stored_rope_attention_forward(
                qkv.cpu_values(), B, T, hd, reference_params, act(), 0, documents);
            expect_close(out, ref.out, "out");
            expect_close(lse, ref.lse, "lse");

            const TwinTensor dout = act_tensor(test::random_normal(B * T * H * hd, seed(4)), {B, T, H * hd});
            const TwinTensor dqkv = poisoned(act(), {B, T, width});
            cpu->attention_backward(dqkv.cpu(), dout.cpu(), qkv.cpu(), lse.cpu(), masked(c.params, mask, b, false));
            gpu->attention_backward(dqkv.gpu(), dout.gpu(), qkv.gpu(), lse.gpu(), masked(c.params, mask, b, true));
            const std::vector<double> ref_dqkv = test::stored_rope_attention_backward(
                dout.cpu_values(), qkv.cpu_values(), B, T, hd, reference_params, act(), documents);
            expect_close(dqkv, ref_dqkv, "dqkv");
        }
}

// A prefill of 9 positions, then 1 and 6 (T 16, separators at 0, 1, 2, 5, 15 of row 0), against
// the full forward's rows.
TEST_P(GpuDocumentMask, CachedForwardMatchesTheFullForward) {
    const int T = 16;
    for (const MaskCase& c : kCases) {
        SCOPED_TRACE(describe(c) + ", documents, window 5");
        const int hd = c.head_dim, H = c.params.n_head, Hkv = c.params.n_kv_head, width = (H + 2 * Hkv) * hd;
        AttentionParams windowed = c.params;
        windowed.window = 5;
        const std::vector<int32_t> token_values = document_tokens(T, seed(5));
        const std::vector<int> documents = f64_document_numbers(token_values, B, T, kSeparator);
        const std::vector<double> all =
            test::rounded(test::random_normal(B * T * width, seed(6), 1.5), act());
        const std::vector<double> full_ref =
            test::stored_rope_attention_forward(all, B, T, hd, windowed, act(), 0, documents).out;
        const TwinTensor k_cache = poisoned(act(), {B, T, Hkv * hd}),
                         v_cache = poisoned(act(), {B, T, Hkv * hd});
        TwinIndices open(*cpu, *gpu, std::vector<int32_t>(B, -1), {B});
        int position = 0;
        for (int count : {9, 1, 6}) {
            SCOPED_TRACE("positions from " + std::to_string(position));
            std::vector<double> chunk, chunk_ref;
            std::vector<int32_t> chunk_tokens;
            for (int b = 0; b < B; ++b)
                for (int t = position; t < position + count; ++t) {
                    const auto row = all.begin() + (int64_t{b} * T + t) * width;
                    chunk.insert(chunk.end(), row, row + width);
                    const auto ref_row = full_ref.begin() + (int64_t{b} * T + t) * H * hd;
                    chunk_ref.insert(chunk_ref.end(), ref_row, ref_row + H * hd);
                    chunk_tokens.push_back(token_values[static_cast<size_t>(b * T + t)]);
                }
            const TwinIndices new_tokens(*cpu, *gpu, chunk_tokens, {B, count});
            const TwinIndices starts(*cpu, *gpu, std::vector<int32_t>(chunk_tokens.size(), -1), {B, count});
            cpu->document_starts_decoding(starts.cpu(), open.cpu(), new_tokens.cpu(), position, kSeparator);
            gpu->document_starts_decoding(starts.gpu(), open.gpu(), new_tokens.gpu(), position, kSeparator);
            EXPECT_EQ(ints(*gpu, starts.gpu()), ints(*cpu, starts.cpu()));
            AttentionParams cpu_params = windowed, gpu_params = windowed;
            cpu_params.document_starts = starts.cpu();
            gpu_params.document_starts = starts.gpu();
            const TwinTensor qkv = act_tensor(chunk, {B, count, width});
            const TwinTensor out = poisoned(act(), {B, count, H * hd});
            cpu->attention_forward_cached(out.cpu(), qkv.cpu(), k_cache.cpu(), v_cache.cpu(), position,
                                          cpu_params);
            gpu->attention_forward_cached(out.gpu(), qkv.gpu(), k_cache.gpu(), v_cache.gpu(), position,
                                          gpu_params);
            expect_close(out, chunk_ref, "out");
            position += count;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuDocumentMask,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
