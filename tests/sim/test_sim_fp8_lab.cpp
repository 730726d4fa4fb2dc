// The kernel lab's FP8 section (bench/kernel_lab/fp8_gemm_lab.h) at its smoke sizes on the CUDA
// simulator: every product and the quantization pass their validation, every row is timed, and
// the rows are the documented ones (BF16 and FP8 per linear layer of d12 and d24, the MLP-up input
// gradient in both, the quantization). The times are the simulator's and mean nothing. Without a
// cuBLASLt algorithm for the bf16 baseline, the section fails in one line.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "bench/kernel_lab/fp8_gemm_lab.h"
#include "bench/kernel_lab/lab_context.h"
#include "bench/kernel_lab/lab_report.h"
#include "tests/cuda_sim/cublaslt_refusals.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/test_support.h"

namespace mixgpt::lab {
namespace {

// A bf16 backend on the simulated device and the lab's context at smoke sizes on its own stream.
struct SimFp8Lab : ::testing::Test {
    void SetUp() override {
        MIXGPT_FP8_GPU_OR_SKIP();
        ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    }
    void TearDown() override {
        if (stream != nullptr) {
            EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
        }
    }
    LabContext smoke_context() {
        LabContext context(*gpu);
        context.stream = stream;
        context.l2_bytes = kSmokeCacheBytes;
        context.timing = {1, 2};
        context.sizes = LabSizes::smoke;
        return context;
    }
    const std::unique_ptr<Backend> gpu = make_backend({"cuda", 0, Precision::bf16, 0});
    cudaStream_t stream = nullptr;
};

TEST_F(SimFp8Lab, EveryRowValidatesAndIsTimedAtSmokeSizes) {
    LabContext context = smoke_context();
    const std::vector<Row> rows = fp8_gemm_rows(context);
    const std::vector<LinearShape> shapes = linear_shapes(LabSizes::smoke);
    ASSERT_EQ(rows.size(), 2 * shapes.size() + 2 * 3u);  // + per model: two dgrad products, one quantization
    int fp8_rows = 0, quantize_rows = 0;
    for (const Row& row : rows) {
        SCOPED_TRACE(row.kernel + " " + row.shape);
        EXPECT_TRUE(row.valid) << row.validation;
        EXPECT_EQ(row.validation.rfind("ok", 0), 0u) << row.validation;
        EXPECT_TRUE(std::isfinite(row.milliseconds) && row.milliseconds > 0) << row.milliseconds;
        EXPECT_TRUE(std::isfinite(row.achieved) && row.achieved > 0) << row.achieved;
        fp8_rows += row.kernel.rfind("fp8_gemm", 0) == 0;
        quantize_rows += row.kernel.rfind("fp8_quantize", 0) == 0;
    }
    EXPECT_EQ(fp8_rows, static_cast<int>(shapes.size()) + 2);
    EXPECT_EQ(quantize_rows, 2);
}

// The bf16 baseline measures cuBLASLt itself, so it takes no fallback: without an algorithm the
// section fails in one line naming the product.
TEST_F(SimFp8Lab, Bf16BaselineWithoutAnAlgorithmIsOneLine) {
    LabContext context = smoke_context();
    {
        const cuda_sim::CublasLtRefusal refusal("a=bf16");
        EXPECT_EQ(test::error_of([&] { fp8_gemm_rows(context); }),
                  "kernel lab: cuBLASLt has no bf16 algorithm for 96x80x128");
    }
}

}  // namespace
}  // namespace mixgpt::lab
