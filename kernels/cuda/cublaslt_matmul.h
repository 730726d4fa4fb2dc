// cuBLASLt products with their descriptors and heuristic-chosen algorithm cached
// per problem (shape, layouts, types, epilogue, operand alignment), and one
// 32 MiB workspace for the stream they run on; a fallback route for a product
// cuBLASLt offers no algorithm for (cublaslt_fallback.h); and the FP8 product in
// row-major terms (run_fp8_gemm), with the rules cuBLASLt sets for it checked first.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>

#include "core/dtype.h"
#include "core/fp8.h"
#include "core/memory.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/scratch.h"

namespace mixgpt::cuda {

// One product in cuBLASLt's column-major terms:
//   D (m,n) = alpha · op(A) (m,k) · op(B) (k,n) [+ bias (m)] [+ D | + beta · C]
// A is stored (m,k), or (k,m) when transpose_a; B is stored (k,n), or (n,k) when transpose_b.
struct LtProduct {
    const void* a = nullptr;
    bool transpose_a = false;
    int64_t lda = 0;
    const void* b = nullptr;
    bool transpose_b = false;
    int64_t ldb = 0;
    void* d = nullptr;
    int64_t ldd = 0;
    int64_t m = 0, n = 0, k = 0;
    cudaDataType input_type = CUDA_R_32F;   // A, and B unless b_type says otherwise
    cudaDataType output_type = CUDA_R_32F;  // C, D and bias
    cublasComputeType_t compute_type = CUBLAS_COMPUTE_32F;
    const void* bias = nullptr;  // (m), or null for none
    bool accumulate = false;     // D += product instead of D = product
    // D = alpha · product + beta · C with C (m,n) of D's type and leading dimension, apart from D
    // (Muon's Newton-Schulz: B = b A + c A A): c non-null, no bias, not accumulate, and no fallback
    // route (run() says so in one line rather than drop alpha or C).
    float alpha = 1.f;
    const void* c = nullptr;
    float beta = 0.f;
    // A strided batch of `batch` products, matrix i's operands at a + i·stride_a elements, and so
    // on (C at D's stride); no fallback route either.
    int batch = 1;
    int64_t stride_a = 0, stride_b = 0, stride_d = 0;
    // FP8 operands (CUDA_R_8F_E4M3, CUDA_R_8F_E5M2; kernels/cuda/README.md has cuBLASLt's rules):
    // B's type when it differs from A's (-1: input_type), and the device scalars (one float each,
    // null: 1) the product is multiplied by: D = a_scale · b_scale · op(A) op(B) [+ C] [+ bias].
    int b_type = -1;
    int bias_type = -1;  // the bias's cudaDataType (-1: output_type); FP8 products with fp32 D take bf16
    const float* a_scale = nullptr;
    const float* b_scale = nullptr;
};

// B's type and the bias's, defaults resolved.
cudaDataType b_type_of(const LtProduct& product);
cudaDataType bias_type_of(const LtProduct& product);

// How LtMatmulRunner::run computes a product: as asked, or on a fallback route
// (cublaslt_fallback.h) when cuBLASLt offers no algorithm for it as asked.
enum class LtRoute { as_asked, fp32_output, widened_operands };

class LtMatmulRunner {
public:
    static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

    LtMatmulRunner(DeviceAllocator& allocator, cudaStream_t stream);
    ~LtMatmulRunner();
    LtMatmulRunner(const LtMatmulRunner&) = delete;
    LtMatmulRunner& operator=(const LtMatmulRunner&) = delete;

    // Enqueues the product on the stream, on the first fallback route cuBLASLt has an algorithm
    // for when it has none for the product as asked (logged once per problem). Throws Error,
    // one line starting with `op`, naming the product's types and shape, when it has none for
    // any route either; and on errors.
    void run(const LtProduct& product, const char* op);

    // Enqueues the product on the stream as asked. Returns false, enqueuing nothing, when
    // cuBLASLt has no algorithm for it; throws on errors.
    bool try_run(const LtProduct& product);

private:
    using Key = std::array<int64_t, 26>;
    struct Plan {
        cublasLtMatmulDesc_t operation = nullptr;
        cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
        cublasLtMatmulAlgo_t algorithm{};
        bool has_algorithm = false;
    };

    static Key key_of(const LtProduct& product);
    Plan make_plan(const LtProduct& product);
    Plan& plan_for(const LtProduct& product);
    LtRoute choose_route(const LtProduct& product, const char* op);
    static void destroy(Plan& plan);

    cudaStream_t stream_;
    cublasLtHandle_t handle_ = nullptr;
    Buffer workspace_;
    ScratchSpace scratch_;  // the fallback routes' fp32 results and widened operands
    std::map<Key, Plan> plans_;
    std::map<Key, LtRoute> routes_;  // per product run() was asked for
};

// An FP8 product in row-major terms, what the CPU's cpu::fp8_matmul computes
// (kernels/cpu/fp8_matmul.h):
//   out (M,N) = *a_scale_inverse · *b_scale_inverse · (A (M,K) · B (N,K)^T) [+ out] [+ bias (N)]
// A and B are FP8 codes, row-major with K contiguous; out is bf16, fp16 or fp32.
struct Fp8Gemm {
    const uint8_t* a = nullptr;  // (M,K)
    Fp8Format a_format = Fp8Format::e4m3;
    const float* a_scale_inverse = nullptr;  // device, one float, 16-byte aligned
    const uint8_t* b = nullptr;              // (N,K)
    Fp8Format b_format = Fp8Format::e4m3;
    const float* b_scale_inverse = nullptr;  // device, one float, 16-byte aligned
    void* out = nullptr;                     // (M,N)
    DType out_dtype = DType::bf16;
    const void* bias = nullptr;  // (N): bf16 for bf16 and fp32 out, fp16 for fp16 out; or null
    int64_t M = 0, N = 0, K = 0;
    bool accumulate = false;  // out += instead of out =
};

// Enqueues the product on the runner's stream as cuBLASLt's "TN" product out^T = B · A^T, through
// LtMatmulRunner::run (its fallbacks: fp32 output with the bias added by a kernel, operands
// widened to bf16). Throws Error, before cuBLASLt sees it, when the product breaks one of
// cuBLASLt's FP8 rules (a type combination outside its table, K or N·sizeof(out) not a multiple
// of 16 bytes, a pointer or a scale inverse not 16-byte aligned: the rule named), and when cuBLASLt has no
// algorithm for it on any route.
void run_fp8_gemm(LtMatmulRunner& runner, const Fp8Gemm& gemm);

// The cudaDataType of an FP8 format (CUDA_R_8F_E4M3, CUDA_R_8F_E5M2).
cudaDataType cuda_type_of(Fp8Format format);

}  // namespace mixgpt::cuda
