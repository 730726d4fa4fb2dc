// The flash kernels skip the tiles the document mask and a sliding window remove (issue 39), seen
// in the simulator's count of ldmatrix phases (tests/cuda_sim/bank_conflicts.h): every key and
// value tile a warp works on is loaded into fragments by ldmatrix, so the count follows the tiles
// computed. bf16, head dimension 64, one sequence of T 1024 and 2 heads, forward and backward.
// The forward's (128-query block, 64-key tile) pairs: causal 2 + 4 + ... + 16 = 72; under
// documents of 128 each block sees its document's 2 tiles, 16 (0.222 of them, against 0.125 of
// the score pairs); under a window of 128, 4 tiles a block (2 for the first), 30 (0.417). The
// loads must stay under those shares (warps that skip tiles none of their rows sees lower them
// further); without skipping both runs would load as many as the causal one. Measured here
// (2026-11-28): 0.176 and 0.331 of the causal run's 887,808 phases.
#include <gtest/gtest.h>

#include <vector>

#include "core/dtype.h"
#include "kernels/ops.h"
#include "tests/cuda_sim/bank_conflicts.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

constexpr int kSkipLength = 1024, kSkipHeads = 2, kSkipHeadDim = 64, kSkipDocument = 128;

// ldmatrix phases of one forward and backward under `params` (with `tokens` for the bounds).
uint64_t flash_tile_loads(Backend& gpu, AttentionParams params, bool documents) {
    const int width = 3 * kSkipHeads * kSkipHeadDim;
    const std::vector<double> values = test::random_normal(static_cast<size_t>(kSkipLength) * width, 3);
    const std::vector<float> floats(values.begin(), values.end());
    std::vector<uint16_t> qkv_host(values.size()), dout_host(static_cast<size_t>(kSkipLength) * kSkipHeads * kSkipHeadDim);
    convert_from_float(floats.data(), qkv_host.data(), DType::bf16, floats.size());
    Buffer qkv = gpu.allocate(qkv_host.size() * 2), out = gpu.allocate(dout_host.size() * 2),
           dout = gpu.allocate(dout_host.size() * 2), dqkv = gpu.allocate(qkv_host.size() * 2),
           lse = gpu.allocate(static_cast<size_t>(kSkipHeads) * kSkipLength * 4), bounds = gpu.allocate(3 * kSkipLength * 4);
    gpu.copy_to_backend(qkv.data(), qkv_host.data(), qkv_host.size() * 2);
    gpu.copy_to_backend(dout.data(), qkv_host.data(), dout_host.size() * 2);
    const TensorView qkv_view(qkv.data(), DType::bf16, {1, kSkipLength, width});
    if (documents) {
        std::vector<int32_t> tokens(kSkipLength, 0);
        for (int t = kSkipDocument - 1; t < kSkipLength; t += kSkipDocument) tokens[static_cast<size_t>(t)] = 1;
        auto* base = bounds.as<int32_t>();
        gpu.copy_to_backend(base, tokens.data(), tokens.size() * 4);
        params.document_starts = TensorView(base + kSkipLength, DType::i32, {1, kSkipLength});
        params.document_ends = TensorView(base + 2 * kSkipLength, DType::i32, {1, kSkipLength});
        gpu.document_bounds(params.document_starts, params.document_ends, TensorView(base, DType::i32, {1, kSkipLength}), 1);
    }
    gpu.synchronize();
    cuda_sim::reset_counters();
    const TensorView out_view(out.data(), DType::bf16, {1, kSkipLength, kSkipHeads * kSkipHeadDim});
    const TensorView lse_view(lse.data(), DType::f32, {1, kSkipHeads, kSkipLength});
    gpu.attention_forward(out_view, lse_view, qkv_view, params);
    gpu.attention_backward(TensorView(dqkv.data(), DType::bf16, {1, kSkipLength, width}),
                           TensorView(dout.data(), DType::bf16, {1, kSkipLength, kSkipHeads * kSkipHeadDim}), qkv_view, lse_view,
                           params);
    gpu.synchronize();
    return cuda_sim::counters().ldmatrix_phases;
}

TEST(SimTileSkipping, DocumentsAndWindowsLoadFewerTiles) {
    const std::unique_ptr<Backend> gpu = make_backend({"cuda", 0, Precision::bf16, 0});
    const AttentionParams causal = multi_head_attention(kSkipHeads);
    AttentionParams window = causal;
    window.window = kSkipDocument;
    const uint64_t all = flash_tile_loads(*gpu, causal, false), documents = flash_tile_loads(*gpu, causal, true),
                   windowed = flash_tile_loads(*gpu, window, false);
    ASSERT_GT(all, 0u);
    const double document_share = static_cast<double>(documents) / static_cast<double>(all),
                 window_share = static_cast<double>(windowed) / static_cast<double>(all);
    EXPECT_LT(document_share, 16.0 / 72) << documents << " of " << all;
    EXPECT_LT(window_share, 30.0 / 72) << windowed << " of " << all;
}

}  // namespace
}  // namespace mixgpt
