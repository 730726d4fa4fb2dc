// The kernel lab (bench/kernel_lab/) at its smoke sizes on the CUDA simulator. Every section runs
// end to end: validation against the CPU backend, input rotation, timing, the ceilings and both
// reports. Every kernel must pass the lab's own validation. A GPU session runs the lab at its
// production sizes, and this keeps that run from being the first time the lab's code executes.
// The times are the simulator's and mean nothing; only their consistency is checked.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/kernel_lab/attention_lab.h"
#include "bench/kernel_lab/backend_lab.h"
#include "bench/kernel_lab/lab_ceilings.h"
#include "bench/kernel_lab/lab_check.h"
#include "bench/kernel_lab/lab_context.h"
#include "bench/kernel_lab/lab_report.h"
#include "tests/cuda_sim/cublaslt_refusals.h"
#include "tests/test_support.h"

namespace mixgpt::lab {
namespace {

class SimKernelLab : public ::testing::TestWithParam<Precision> {
protected:
    void SetUp() override {
        gpu_ = make_backend({"cuda", 0, GetParam(), 0});
        ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
        context_ = std::make_unique<LabContext>(*gpu_);
        context_->precision = GetParam();
        context_->stream = stream_;
        context_->l2_bytes = kSmokeCacheBytes;
        context_->timing = {1, 2};
        context_->sizes = LabSizes::smoke;
    }
    void TearDown() override { EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess); }

    std::unique_ptr<Backend> gpu_;
    cudaStream_t stream_ = nullptr;
    std::unique_ptr<LabContext> context_;
};

void expect_valid_and_timed(const Row& row) {
    SCOPED_TRACE(row.kernel + " " + row.shape);
    EXPECT_TRUE(row.valid) << row.validation;
    EXPECT_EQ(row.validation.rfind("ok", 0), 0u) << row.validation;
    EXPECT_TRUE(std::isfinite(row.milliseconds) && row.milliseconds > 0) << row.milliseconds;
    EXPECT_TRUE(std::isfinite(row.achieved) && row.achieved > 0) << row.achieved;
}

// What `print` writes.
std::string printed(const std::function<void(std::FILE*)>& print) {
    char* text = nullptr;
    size_t length = 0;
    std::FILE* out = open_memstream(&text, &length);
    print(out);
    std::fclose(out);
    std::string result(text, length);
    std::free(text);
    return result;
}

// Rows come per shape in attention_shapes' order (which lists each head dimension's multi-head
// shapes, then its grouped one with RoPE, then its document-mask one, then its window one); the
// grouped, document-mask and window rows are named so and carry their heads, their documents'
// length or the window.
TEST_P(SimKernelLab, FlashAttentionRowsPassValidationAtEveryShape) {
    const std::vector<Row> rows = attention_rows(*context_);
    const std::vector<AttentionShape> shapes = attention_shapes(LabSizes::smoke);
    ASSERT_EQ(rows.size(), 2 * shapes.size());
    int grouped_shapes = 0, document_shapes = 0, window_shapes = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
        const bool grouped = shapes[i].kv_heads != shapes[i].heads, documents = shapes[i].document_length > 0,
                   window = shapes[i].window > 0;
        grouped_shapes += grouped ? 1 : 0;
        document_shapes += documents ? 1 : 0;
        window_shapes += window ? 1 : 0;
        for (const Row& row : {rows[2 * i], rows[2 * i + 1]}) {
            expect_valid_and_timed(row);
            EXPECT_EQ(row.rate, Rate::tflop_per_s);
            ASSERT_EQ(row.dims.size(), grouped ? 6u : documents || window ? 5u : 4u);
            EXPECT_EQ(row.dims[1].second, shapes[i].length);
            EXPECT_EQ(row.dims[3].second, shapes[i].head_dim);
            if (grouped) {
                EXPECT_EQ(row.dims[4].second, shapes[i].kv_heads);
            }
            if (documents) {
                EXPECT_EQ(row.dims[4].second, shapes[i].document_length);
            }
            if (window) {
                EXPECT_EQ(row.dims[4].second, shapes[i].window);
            }
        }
        const std::string variant = grouped     ? " (GQA+RoPE)"
                                    : documents ? " (documents " + std::to_string(shapes[i].document_length) + ")"
                                    : window    ? " (window " + std::to_string(shapes[i].window) + ")"
                                                : "";
        EXPECT_EQ(rows[2 * i].kernel, "flash_attention_forward" + variant);
        EXPECT_EQ(rows[2 * i + 1].kernel, "flash_attention_backward" + variant);
    }
    EXPECT_EQ(grouped_shapes, 2) << "one grouped shape with RoPE per head dimension";
    EXPECT_EQ(document_shapes, 2) << "one document-mask shape per head dimension";
    EXPECT_EQ(window_shapes, 2) << "one window shape per head dimension";
}

TEST(SimKernelLabShapes, AttentionLengthsChooseTheTimedShapes) {
    // Per head dimension: the causal shape, then documents of 512 and of 128 tokens, then a window of 512.
    const std::vector<AttentionShape> chosen = attention_shapes(LabSizes::production, {1024});
    ASSERT_EQ(chosen.size(), 8u);
    const int document_lengths[] = {0, 512, 128, 0}, windows[] = {0, 0, 0, 512};
    for (size_t i = 0; i < chosen.size(); ++i) {
        EXPECT_EQ(chosen[i].length, 1024);
        EXPECT_EQ(chosen[i].batch * chosen[i].length, 16384);
        EXPECT_EQ(chosen[i].head_dim, i < 4 ? 64 : 128);
        EXPECT_EQ(chosen[i].document_length, document_lengths[i % 4]);
        EXPECT_EQ(chosen[i].window, windows[i % 4]);
    }
    // Per head dimension: T 64 and 150, the grouped RoPE shape at T 150, documents of 40 and a
    // window of 37 at T 150.
    EXPECT_EQ(attention_shapes(LabSizes::smoke).size(), 10u);
    EXPECT_EQ(attention_shapes(LabSizes::production, {8192}).size(), 8u);
    // The grouped shape comes with its own length only.
    const std::vector<AttentionShape> at_2048 = attention_shapes(LabSizes::production, {2048});
    ASSERT_EQ(at_2048.size(), 4u);
    EXPECT_EQ(at_2048[0].kv_heads, at_2048[0].heads);
    EXPECT_LT(at_2048[1].kv_heads, at_2048[1].heads);
    EXPECT_GT(at_2048[1].rope_theta, 0.f);
    EXPECT_THROW(attention_shapes(LabSizes::smoke, {1024}), Error);
}

TEST_P(SimKernelLab, BackendRowsPassValidation) {
    const std::vector<Row> rows = backend_rows(*context_);
    ASSERT_EQ(rows.size(), 14u);  // the classifier twice (plain, and with soft-cap and z-loss); QK-norm
    for (const Row& row : rows) {
        expect_valid_and_timed(row);
        EXPECT_EQ(row.rate, Rate::gb_per_s);
    }
}

// The GEMM ceiling measures cuBLASLt itself: without an algorithm, in any of the heuristic's
// three ways of saying so, it fails in one line naming the size, and runs nothing.
TEST_P(SimKernelLab, GemmCeilingWithoutAnAlgorithmIsOneLine) {
    for (const cuda_sim::RefusalForm form :
         {cuda_sim::RefusalForm::not_supported, cuda_sim::RefusalForm::none_found,
          cuda_sim::RefusalForm::failed_result}) {
        const cuda_sim::CublasLtRefusal refusal([](const cuda_sim::HeuristicQuery&) { return true; }, form);
        const std::string message = test::error_of(
            [&] { measure_gemm_throughput(*gpu_, stream_, kSmokeCeilings.gemm_size, context_->timing); });
        EXPECT_EQ(message.rfind("kernel lab: cuBLASLt has no bf16 GEMM algorithm for n = 256 (", 0), 0u)
            << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

TEST_P(SimKernelLab, CeilingsAndReportsAgreeWithTheRows) {
    Ceilings ceilings;
    ceilings.copy_gb_per_s =
        measure_copy_bandwidth(*gpu_, stream_, kSmokeCeilings.copy_bytes, context_->timing);
    ceilings.gemm_tflop_per_s =
        measure_gemm_throughput(*gpu_, stream_, kSmokeCeilings.gemm_size, context_->timing);
    EXPECT_TRUE(std::isfinite(ceilings.copy_gb_per_s) && ceilings.copy_gb_per_s > 0);
    EXPECT_TRUE(std::isfinite(ceilings.gemm_tflop_per_s) && ceilings.gemm_tflop_per_s > 0);

    const std::vector<Row> rows = {
        {"flash_attention_forward",
         "B=2 T=64 H=2 hd=64",
         {{"T", 64}},
         0.5,
         Rate::tflop_per_s,
         2.0,
         "ok",
         true},
        {"adamw_step (backend)", "n=100000", {}, 0.25, Rate::gb_per_s, 3.0, "FAILED: m", false}};
    DeviceInfo device;
    device.name = gpu_->name();
    device.precision = precision_name(GetParam());
    device.sizes = "smoke";
    const std::vector<KernelOccupancy> occupancy = {{"forward_kernel<__half, 128>", 128, 0, 0, 52224, 4, 16}};
    const nlohmann::json json = nlohmann::json::parse(report_json(device, ceilings, rows, occupancy));
    EXPECT_EQ(json["sizes"], "smoke");
    EXPECT_EQ(json["precision"], precision_name(GetParam()));
    EXPECT_DOUBLE_EQ(json["ceilings"]["copy_gb_per_s"].get<double>(), ceilings.copy_gb_per_s);
    ASSERT_EQ(json["rows"].size(), 2u);
    EXPECT_EQ(json["rows"][0]["dims"]["T"], 64);
    EXPECT_EQ(json["rows"][0]["unit"], "TFLOP/s");
    EXPECT_DOUBLE_EQ(json["rows"][0]["fraction_of_ceiling"].get<double>(), 2.0 / ceilings.gemm_tflop_per_s);
    EXPECT_DOUBLE_EQ(json["rows"][1]["fraction_of_ceiling"].get<double>(), 3.0 / ceilings.copy_gb_per_s);
    EXPECT_EQ(json["rows"][1]["valid"], false);
    ASSERT_EQ(json["occupancy"].size(), 1u);
    EXPECT_EQ(json["occupancy"][0]["dynamic_shared_bytes"], 52224);
    EXPECT_EQ(json["occupancy"][0]["warps_per_multiprocessor"], 16);

    const std::string table =
        printed([&](std::FILE* out) { print_table(out, device, ceilings, rows, occupancy); });
    EXPECT_NE(table.find("sizes smoke"), std::string::npos) << table;
    EXPECT_NE(table.find("FAILED: m"), std::string::npos) << table;
    EXPECT_NE(table.find("forward_kernel<__half, 128>"), std::string::npos) << table;
    EXPECT_NE(table.find("registers and static shared memory unknown"), std::string::npos) << table;
}

INSTANTIATE_TEST_SUITE_P(SimPrecisions, SimKernelLab, ::testing::Values(Precision::bf16, Precision::fp16),
                         [](const auto& info) { return std::string(precision_name(info.param)); });

// The lab's criterion (lab_check.h): a low-precision result fails when it is more than twice as
// far from the reference as the CPU backend's run of the same precision; an fp32 one may instead
// meet the FP32 criterion, 1e-5.
TEST(SimKernelLabCheck, JudgeHoldsTheGpuToTwiceTheCpuError) {
    const std::vector<float> reference = {1.f, -2.f, 3.f, -4.f};
    const std::vector<float> cpu = {1.01f, -2.f, 3.f, -4.f};
    EXPECT_TRUE(judge("x", {1.015f, -2.f, 3.f, -4.f}, cpu, reference, DType::bf16).passed());
    EXPECT_FALSE(judge("x", {1.03f, -2.f, 3.f, -4.f}, cpu, reference, DType::bf16).passed());
    EXPECT_FALSE(all_passed({judge("x", cpu, cpu, reference, DType::bf16),
                             judge("y", {1.1f, -2.f, 3.f, -4.f}, cpu, reference, DType::bf16)}));
    const float norm = std::sqrt(30.f);
    EXPECT_TRUE(judge("x", {1.f + 5e-6f * norm, -2.f, 3.f, -4.f}, reference, reference, DType::f32).passed());
    EXPECT_FALSE(
        judge("x", {1.f + 2e-5f * norm, -2.f, 3.f, -4.f}, reference, reference, DType::f32).passed());
}

}  // namespace
}  // namespace mixgpt::lab
