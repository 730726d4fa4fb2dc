// The fused flash attention kernels (kernels/cuda/flash_attention.h) against the float64
// reference, by the 2x rule: in bf16 and fp16 their error may be at most twice the error of
// the CPU backend's run of the same stored inputs (fp32 arithmetic, storage rounding).
// Forward (out, lse) and backward (dq, dk, dv) for head dimensions 64 and 128, sequence
// lengths that leave partial query and key tiles, and logits of magnitude ~100; the backward
// (and forward) must be bit-identical run to run. Argument checks run without a GPU.
#include <gtest/gtest.h>

#ifdef MIXGPT_WITH_CUDA

#include <cuda_runtime.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "kernels/cuda/flash_attention.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinTensor;

struct FlashCase {
    int batch, length, heads, head_dim;
    double qk_std;  // std of q and k: 2 spreads the softmax; 10 makes logits of magnitude ~100
    const char* what;
};

// Forward tiles are 128 (hd 64) or 64 (hd 128) queries by 64 keys; backward tiles 64 by 64 or 32.
constexpr FlashCase kCases[] = {
    // 16 heads of 3 rows: over one head the 2x rule's error ratio came from a handful of values
    // and failed for some seeds (dq 3.5x the CPU error at MIXGPT_TEST_SEED=2511186790).
    {4, 3, 4, 64, 2.0, "T = 3: one tile, nearly all masked"},
    {2, 77, 2, 64, 2.0, "hd 64, T = 77: one partial tile"},
    {1, 200, 2, 64, 2.0, "hd 64, T = 200: several tiles, the last partial"},
    {2, 128, 1, 128, 2.0, "hd 128, T = 128: whole tiles"},
    {1, 150, 2, 128, 2.0, "hd 128, T = 150: several tiles, the last partial"},
    {1, 130, 2, 64, 10.0, "hd 64, large logits"},
    {1, 100, 1, 128, 10.0, "hd 128, large logits"},
};

// qkv (B,T,3C): standard normal, q and k scaled by qk_std.
std::vector<double> attention_inputs(const FlashCase& c, uint32_t seed) {
    const int C = c.heads * c.head_dim;
    std::vector<double> values = test::random_normal(static_cast<size_t>(c.batch) * c.length * 3 * C, seed);
    for (size_t i = 0; i < values.size(); ++i)
        if (static_cast<int>(i % (3 * C)) < 2 * C) values[i] *= c.qk_std;
    return values;
}

// Columns [part*C, (part+1)*C) of each row of a (rows, 3C) tensor: q, k or v.
std::vector<double> qkv_part(const std::vector<double>& values, int C, int part) {
    std::vector<double> result;
    for (size_t row = 0; row < values.size() / (3 * C); ++row) {
        const auto begin = values.begin() + static_cast<std::ptrdiff_t>(row * 3 * C + part * C);
        result.insert(result.end(), begin, begin + C);
    }
    return result;
}

std::vector<char> bytes_of(Backend& backend, const TensorView& view) {
    std::vector<char> bytes(view.bytes());
    backend.copy_to_host(bytes.data(), view.data, bytes.size());
    return bytes;
}

class GpuFlashAttention : public gpu_test::GpuPrecisionTest {
protected:
    // Runs a launcher on the default stream once the backend's queued uploads are done, and waits.
    void run_on_gpu(const std::function<void(cudaStream_t)>& launch) const {
        gpu->synchronize();
        launch(nullptr);
        CUDA_CHECK(cudaStreamSynchronize(nullptr));
    }
    void forward(const TwinTensor& out, const TwinTensor& lse, const TwinTensor& qkv, int H) const {
        run_on_gpu([&](cudaStream_t stream) {
            cuda::flash_attention_forward(out.gpu(), lse.gpu(), qkv.gpu(), multi_head_attention(H),
                                          TensorView(), stream);
        });
    }
    void backward(const TensorView& dqkv, const TwinTensor& dout, const TwinTensor& qkv,
                  const TwinTensor& lse, int H) const {
        const int64_t B = qkv.gpu().dim(0), T = qkv.gpu().dim(1);
        const Buffer workspace = gpu->allocate(cuda::flash_attention_backward_workspace_bytes(B, H, T));
        const TensorView delta(workspace.data(), DType::f32, {B, H, T});
        run_on_gpu([&](cudaStream_t stream) {
            cuda::flash_attention_backward(dqkv, dout.gpu(), qkv.gpu(), lse.gpu(), delta,
                                           multi_head_attention(H), TensorView(), stream);
        });
    }
};

TEST_P(GpuFlashAttention, ForwardAndBackwardWithinTwiceTheCpuError) {
    for (const FlashCase& c : kCases) {
        SCOPED_TRACE(c.what);
        const int B = c.batch, T = c.length, H = c.heads, C = H * c.head_dim;
        const TwinTensor qkv = act_tensor(attention_inputs(c, seed(1)), {B, T, 3 * C});
        const TwinTensor out = poisoned(act(), {B, T, C}), lse = poisoned(DType::f32, {B, H, T});
        cpu->attention_forward(out.cpu(), lse.cpu(), qkv.cpu(), multi_head_attention(H));
        forward(out, lse, qkv, H);
        const F64AttentionForward ref = f64_attention_forward(qkv.cpu_values(), B, T, C, H);
        expect_close(out, ref.out, "out");
        expect_close(lse, ref.lse, "lse");

        // Each backend's backward reads its own forward's out and lse.
        const TwinTensor dout =
            act_tensor(test::random_normal(static_cast<size_t>(B) * T * C, seed(2)), {B, T, C});
        const TwinTensor dqkv = poisoned(act(), {B, T, 3 * C});
        cpu->attention_backward(dqkv.cpu(), dout.cpu(), qkv.cpu(), lse.cpu(), multi_head_attention(H));
        backward(dqkv.gpu(), dout, qkv, lse, H);
        const std::vector<double> ref_dqkv =
            f64_attention_backward(dout.cpu_values(), qkv.cpu_values(), B, T, C, H);
        const std::vector<double> gpu_dqkv = dqkv.gpu_values(), cpu_dqkv = dqkv.cpu_values();
        const char* names[] = {"dq", "dk", "dv"};
        for (int part = 0; part < 3; ++part)
            gpu_test::expect_matches_cpu(qkv_part(gpu_dqkv, C, part), qkv_part(cpu_dqkv, C, part),
                                         qkv_part(ref_dqkv, C, part), act(), GetParam(), names[part]);
    }
}

TEST_P(GpuFlashAttention, BitIdenticalRunToRun) {
    for (const int head_dim : {64, 128}) {
        SCOPED_TRACE("head_dim = " + std::to_string(head_dim));
        const FlashCase c{2, 333, 2, head_dim, 2.0, ""};
        const int B = c.batch, T = c.length, H = c.heads, C = H * head_dim;
        const TwinTensor qkv = act_tensor(attention_inputs(c, seed(3)), {B, T, 3 * C});
        const TwinTensor dout =
            act_tensor(test::random_normal(static_cast<size_t>(B) * T * C, seed(4)), {B, T, C});
        const TwinTensor out = poisoned(act(), {B, T, C}), lse = poisoned(DType::f32, {B, H, T});
        const TwinTensor again_out = poisoned(act(), {B, T, C}), again_lse = poisoned(DType::f32, {B, H, T});
        forward(out, lse, qkv, H);
        forward(again_out, again_lse, qkv, H);
        EXPECT_EQ(bytes_of(*gpu, out.gpu()), bytes_of(*gpu, again_out.gpu())) << "out";
        EXPECT_EQ(bytes_of(*gpu, lse.gpu()), bytes_of(*gpu, again_lse.gpu())) << "lse";

        const TwinTensor first = poisoned(act(), {B, T, 3 * C}), second = poisoned(act(), {B, T, 3 * C});
        backward(first.gpu(), dout, qkv, lse, H);
        backward(second.gpu(), dout, qkv, lse, H);
        EXPECT_EQ(bytes_of(*gpu, first.gpu()), bytes_of(*gpu, second.gpu())) << "dqkv";
    }
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuFlashAttention,
                         ::testing::Values(Precision::bf16, Precision::fp16), gpu_test::precision_test_name);

// The launchers' checks come before any CUDA call: these need no GPU.
TEST(GpuFlashAttentionArguments, SupportsBf16AndFp16WithHeadDims64And128) {
    for (const DType dtype : {DType::bf16, DType::f16}) {
        EXPECT_TRUE(cuda::flash_attention_supported(dtype, 64));
        EXPECT_TRUE(cuda::flash_attention_supported(dtype, 128));
        EXPECT_FALSE(cuda::flash_attention_supported(dtype, 80));
        EXPECT_FALSE(cuda::flash_attention_supported(dtype, 256));
    }
    EXPECT_FALSE(cuda::flash_attention_supported(DType::f32, 64));
}

TEST(GpuFlashAttentionArguments, RejectsWhatItCannotRun) {
    alignas(16) static char storage[64];  // never read: every call below throws first
    void* data = storage;
    const int H = 2, T = 3;
    const auto forward_error = [&](DType dtype, int head_dim, void* qkv_data, int lse_length) {
        const int C = H * head_dim;
        const TensorView qkv(qkv_data, dtype, {1, T, 3 * C}), out(data, dtype, {1, T, C});
        const TensorView lse(data, DType::f32, {1, H, lse_length});
        return test::error_of([&] {
            cuda::flash_attention_forward(out, lse, qkv, multi_head_attention(H), TensorView(), nullptr);
        });
    };
    EXPECT_NE(forward_error(DType::bf16, 80, data, T).find("head_dim 80 is not supported"),
              std::string::npos);
    EXPECT_NE(forward_error(DType::f32, 64, data, T).find("fp32 with head_dim 64 is not supported"),
              std::string::npos);
    EXPECT_NE(forward_error(DType::f16, 64, storage + 2, T).find("qkv is not 16-byte aligned"),
              std::string::npos);
    EXPECT_NE(forward_error(DType::bf16, 128, data, T + 1).find("lse"), std::string::npos);

    const TensorView qkv(data, DType::bf16, {1, T, 3 * 64}), act(data, DType::bf16, {1, T, 64});
    const TensorView stats(data, DType::f32, {1, 1, T}), short_stats(data, DType::f32, {1, 1, T - 1});
    EXPECT_THROW(cuda::flash_attention_backward(act, act, qkv, stats, stats, multi_head_attention(1),
                                                TensorView(), nullptr),
                 Error);  // dqkv shape
    EXPECT_THROW(cuda::flash_attention_backward(qkv, act, qkv, stats, short_stats, multi_head_attention(1),
                                                TensorView(), nullptr),
                 Error);

    // Grouped heads and RoPE: 4 query heads on 2 key/value heads of 64 make rows of 512.
    const TensorView grouped(data, DType::bf16, {1, T, 512}), grouped_out(data, DType::bf16, {1, T, 256});
    const TensorView grouped_lse(data, DType::f32, {1, 4, T}), table(data, DType::f32, {T - 1, 64});
    const auto grouped_error = [&](const AttentionParams& params, const TensorView& rope) {
        return test::error_of(
            [&] { cuda::flash_attention_forward(grouped_out, grouped_lse, grouped, params, rope, nullptr); });
    };
    EXPECT_NE(grouped_error({4, 3, 0.f}, TensorView()).find("n_kv_head 3 does not divide n_head 4"),
              std::string::npos);
    EXPECT_NE(grouped_error({4, 2, 1e4f}, TensorView()).find("the RoPE table is missing"), std::string::npos);
    EXPECT_NE(grouped_error({4, 2, 0.f}, table).find("the RoPE table is given"), std::string::npos);
    EXPECT_NE(grouped_error({4, 2, 1e4f}, table).find("expected (>= 3, 64) fp32"), std::string::npos);
}

}  // namespace
}  // namespace mixgpt

#endif  // MIXGPT_WITH_CUDA
