#include "bench/kernel_lab/lab_ceilings.h"

#include <cublasLt.h>

#include "bench/kernel_lab/lab_fill.h"
#include "core/cuda_check.h"
#include "core/log.h"

namespace mixgpt::lab {
namespace {

// The cuBLASLt objects of one GEMM, destroyed together.
struct LtGemm {
    cublasLtHandle_t handle = nullptr;
    cublasLtMatmulDesc_t operation = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulPreference_t preference = nullptr;
    ~LtGemm() {
        if (preference != nullptr) cublasLtMatmulPreferenceDestroy(preference);
        if (d != nullptr) cublasLtMatrixLayoutDestroy(d);
        if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
        if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
        if (operation != nullptr) cublasLtMatmulDescDestroy(operation);
        if (handle != nullptr) cublasLtDestroy(handle);
    }
};

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

}  // namespace

double measure_copy_bandwidth(Backend& gpu, cudaStream_t stream, size_t bytes, const TimingSettings& timing) {
    const Buffer source = gpu.allocate(bytes), destination = gpu.allocate(bytes);
    gpu.synchronize();
    const double milliseconds = time_with_events(
        stream,
        [&](int) {
            CUDA_CHECK(
                cudaMemcpyAsync(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice, stream));
        },
        timing);
    return 2.0 * static_cast<double>(bytes) / (milliseconds * 1e-3) / 1e9;
}

double measure_gemm_throughput(Backend& gpu, cudaStream_t stream, int n, const TimingSettings& timing) {
    const size_t elements = static_cast<size_t>(n) * n;
    const Buffer a = gpu.allocate(elements * 2), b = gpu.allocate(elements * 2),
                 d = gpu.allocate(elements * 2);
    const Buffer workspace = gpu.allocate(kWorkspaceBytes);
    gpu.synchronize();
    fill_random(a.data(), DType::bf16, static_cast<int64_t>(elements), 1, 1.f, 0.f, stream);
    fill_random(b.data(), DType::bf16, static_cast<int64_t>(elements), 2, 1.f, 0.f, stream);

    LtGemm gemm;
    CUBLAS_CHECK(cublasLtCreate(&gemm.handle));
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&gemm.operation, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(gemm.operation, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                                sizeof(transpose)));
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(gemm.operation, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&gemm.a, CUDA_R_16BF, n, n, n));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&gemm.b, CUDA_R_16BF, n, n, n));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&gemm.d, CUDA_R_16BF, n, n, n));
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&gemm.preference));
    const size_t workspace_bytes = kWorkspaceBytes;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(gemm.preference,
                                                      CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &workspace_bytes, sizeof(workspace_bytes)));
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    // cuBLASLt says it has no algorithm in any of three ways (cublasLt.h): NOT_SUPPORTED, no
    // result, or a result whose state is not SUCCESS. The ceiling measures cuBLASLt itself, so
    // there is no fallback: one line.
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        gemm.handle, gemm.operation, gemm.a, gemm.b, gemm.d, gemm.d, gemm.preference, 1, &heuristic, &found);
    MIXGPT_REQUIRE(
        status == CUBLAS_STATUS_SUCCESS && found > 0 && heuristic.state == CUBLAS_STATUS_SUCCESS,
        format("kernel lab: cuBLASLt has no bf16 GEMM algorithm for n = %d (%s)", n,
               cublasLtGetStatusString(status == CUBLAS_STATUS_SUCCESS ? heuristic.state : status)));

    const float alpha = 1.f, beta = 0.f;
    const double milliseconds = time_with_events(
        stream,
        [&](int) {
            CUBLAS_CHECK(cublasLtMatmul(gemm.handle, gemm.operation, &alpha, a.data(), gemm.a, b.data(),
                                        gemm.b, &beta, d.data(), gemm.d, d.data(), gemm.d, &heuristic.algo,
                                        workspace.data(), kWorkspaceBytes, stream));
        },
        timing);
    const double flops = 2.0 * n * static_cast<double>(n) * n;
    return flops / (milliseconds * 1e-3) / 1e12;
}

}  // namespace mixgpt::lab
