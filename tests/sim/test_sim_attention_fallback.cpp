// The fp32 attention's products (kernels/cuda/attention_products.h) when the simulated cuBLASLt
// offers no algorithm for fp32 products (tests/cuda_sim/cublaslt_refusals.h), in each of the three
// ways cuBLASLt can say so: the forward stops at its first product, says so once in a warning, and
// every fp32 attention of the backend takes the simple kernels from then on; forward and backward
// are judged against the float64 reference as tests/gpu/test_gpu_attention_products.cpp judges them.
#include <gtest/gtest.h>

#include <string>

#include "tests/cuda_sim/cublaslt_refusals.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinTensor;

class SimAttentionProductsRefused : public gpu_test::GpuPrecisionTest {};

size_t occurrences(const std::string& text, const std::string& part) {
    size_t found = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++found;
    return found;
}

TEST_P(SimAttentionProductsRefused, TheSimpleKernelsTakeOverAfterOneWarning) {
    const int B = 2, T = 40, hd = 16;
    const AttentionParams params(4, 2, 10000.f);
    const int H = params.n_head, width = (H + 2 * params.n_kv_head) * hd;
    for (const cuda_sim::RefusalForm form :
         {cuda_sim::RefusalForm::not_supported, cuda_sim::RefusalForm::none_found,
          cuda_sim::RefusalForm::failed_result}) {
        SCOPED_TRACE("refusal form " + std::to_string(static_cast<int>(form)));
        const cuda_sim::CublasLtRefusal refusal(
            [](const cuda_sim::HeuristicQuery& query) {
                return query.a_type == CUDA_R_32F && query.compute == CUBLAS_COMPUTE_32F;
            },
            form);
        const std::unique_ptr<Backend> device = make_backend({"cuda", 0, GetParam(), 0});
        EXPECT_GT(device->attention_scratch_bytes(T, params.n_kv_head), 0u);  // the products, until refused

        const TwinTensor qkv(*cpu, *device, test::random_normal(B * T * width, seed(1), 1.5), act(),
                             {B, T, width});
        const TwinTensor dout(*cpu, *device, test::random_normal(B * T * H * hd, seed(2)), act(),
                              {B, T, H * hd});
        const F64AttentionForward ref =
            test::stored_rope_attention_forward(qkv.cpu_values(), B, T, hd, params, act());
        const std::vector<double> ref_dqkv = test::stored_rope_attention_backward(
            dout.cpu_values(), qkv.cpu_values(), B, T, hd, params, act());
        test::CapturedStderr log;
        for (int pass = 0; pass < 2; ++pass) {  // the second pass plans nothing again
            const TwinTensor out = TwinTensor::poisoned(*cpu, *device, act(), {B, T, H * hd});
            const TwinTensor lse = TwinTensor::poisoned(*cpu, *device, DType::f32, {B, H, T});
            const TwinTensor dqkv = TwinTensor::poisoned(*cpu, *device, act(), {B, T, width});
            cpu->attention_forward(out.cpu(), lse.cpu(), qkv.cpu(), params);
            device->attention_forward(out.gpu(), lse.gpu(), qkv.gpu(), params);
            expect_close(out, ref.out, "out");
            expect_close(lse, ref.lse, "lse");
            cpu->attention_backward(dqkv.cpu(), dout.cpu(), qkv.cpu(), lse.cpu(), params);
            device->attention_backward(dqkv.gpu(), dout.gpu(), qkv.gpu(), lse.gpu(), params);
            expect_close(dqkv, ref_dqkv, "dqkv");
        }
        const std::string text = log.take();
        // The first chunk's score product, K Q^T of both key heads and their first query heads, read
        // from the RoPE-rotated q and k rows ((H + Hkv) hd = 96 floats apart).
        EXPECT_EQ(occurrences(text,
                              "cuda attention: cuBLASLt offers no algorithm for fp32 x fp32 -> fp32, m=40 "
                              "n=40 k=16 (op TN, ld 96/96/40); fp32 attention takes the simple kernels"),
                  1u)
            << text;
        EXPECT_EQ(occurrences(text, "fp32 attention takes the simple kernels from now on"), 1u) << text;
        EXPECT_EQ(device->attention_scratch_bytes(T, params.n_kv_head), 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(SimPrecisions, SimAttentionProductsRefused,
                         ::testing::Values(Precision::fp32, Precision::tf32), gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
