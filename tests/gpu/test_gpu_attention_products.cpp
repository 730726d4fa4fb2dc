// The fp32 attention's cuBLASLt products (kernels/cuda/attention_products.h) under their scratch
// limit: with room for both key/value heads at once (one product per matrix), for one at a time
// (two chunks), and for none (the simple kernels take it), forward and backward under grouped
// heads, RoPE and a window, each against the float64 reference by the 2x rule; and the scratch the
// backend reports for a length, which is the chunking its dispatch uses. The other attention suites
// reach the products through the default dispatch in fp32 and tf32.
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/attention_products.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinTensor;

constexpr int B = 2, T = 70, kHeadDim = 16;
constexpr size_t kHeadBytes = 2 * sizeof(float) * T * T;  // one head's two (T,T) fp32 matrices

class GpuAttentionProducts : public gpu_test::GpuPrecisionTest {
protected:
    // A CUDA backend of this precision whose products may take `bytes` of scratch.
    std::unique_ptr<Backend> backend_with(size_t bytes) const {
        BackendOptions options{"cuda", 0, GetParam(), 0};
        options.attention_products_bytes = bytes;
        return make_backend(options);
    }
};

TEST_P(GpuAttentionProducts, OneChunkTwoChunksAndTheSimpleKernelsAgreeWithTheReference) {
    AttentionParams params(4, 2, 10000.f);  // two query heads per key/value head, RoPE
    params.window = 37;
    const int H = params.n_head, Hkv = params.n_kv_head, width = (H + 2 * Hkv) * kHeadDim;
    const std::vector<double> qkv_values = test::random_normal(B * T * width, seed(1), 1.5);
    const std::vector<double> dout_values = test::random_normal(B * T * H * kHeadDim, seed(2));
    const std::vector<double> qkv_stored = test::rounded(qkv_values, act());
    const F64AttentionForward ref =
        test::stored_rope_attention_forward(qkv_stored, B, T, kHeadDim, params, act());
    const std::vector<double> ref_dqkv = test::stored_rope_attention_backward(
        test::rounded(dout_values, act()), qkv_stored, B, T, kHeadDim, params, act());

    const struct {
        const char* name;
        size_t bytes;
        int64_t chunk;  // key/value heads per chunk; 0: the simple kernels
    } limits[] = {{"both heads at once", 2 * kHeadBytes, 2},
                  {"one head at a time", 2 * kHeadBytes - 1, 1},
                  {"no room: simple kernels", kHeadBytes - 1, 0}};
    for (const auto& limit : limits) {
        SCOPED_TRACE(limit.name);
        const std::unique_ptr<Backend> device = backend_with(limit.bytes);
        EXPECT_EQ(cuda::attention_products_chunk_heads(T, Hkv, limit.bytes), limit.chunk);
        EXPECT_EQ(device->attention_scratch_bytes(T, Hkv), static_cast<size_t>(limit.chunk) * kHeadBytes);

        const TwinTensor qkv(*cpu, *device, qkv_values, act(), {B, T, width});
        const TwinTensor out = TwinTensor::poisoned(*cpu, *device, act(), {B, T, H * kHeadDim});
        const TwinTensor lse = TwinTensor::poisoned(*cpu, *device, DType::f32, {B, H, T});
        cpu->attention_forward(out.cpu(), lse.cpu(), qkv.cpu(), params);
        device->attention_forward(out.gpu(), lse.gpu(), qkv.gpu(), params);
        expect_close(out, ref.out, "out");
        expect_close(lse, ref.lse, "lse");

        const TwinTensor dout(*cpu, *device, dout_values, act(), {B, T, H * kHeadDim});
        const TwinTensor dqkv = TwinTensor::poisoned(*cpu, *device, act(), {B, T, width});
        cpu->attention_backward(dqkv.cpu(), dout.cpu(), qkv.cpu(), lse.cpu(), params);
        device->attention_backward(dqkv.gpu(), dout.gpu(), qkv.gpu(), lse.gpu(), params);
        expect_close(dqkv, ref_dqkv, "dqkv");
    }
}

// What the default limit (256 MiB) gives: GPT-2 small's 12 heads at T 1024 in one chunk (8 MiB
// each), 64 heads in chunks of 32, nothing at T 8192 (512 MiB a head); bf16 and fp16 never take
// the products (the flash or simple kernels do), nor does a backend told to keep the simple ones.
TEST_P(GpuAttentionProducts, ScratchOfTheDefaultLimit) {
    const size_t mib = size_t{1} << 20;
    EXPECT_EQ(gpu->attention_scratch_bytes(1024, 12), 12 * 8 * mib);
    EXPECT_EQ(gpu->attention_scratch_bytes(1024, 64), 32 * 8 * mib);
    EXPECT_EQ(gpu->attention_scratch_bytes(8192, 1), 0u);
    BackendOptions simple{"cuda", 0, GetParam(), 0};
    simple.flash_attention = false;
    EXPECT_EQ(make_backend(simple)->attention_scratch_bytes(1024, 12), 0u);
    for (const Precision narrow : {Precision::bf16, Precision::fp16})
        EXPECT_EQ(make_backend({"cuda", 0, narrow, 0})->attention_scratch_bytes(1024, 12), 0u);
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuAttentionProducts,
                         ::testing::Values(Precision::fp32, Precision::tf32), gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
