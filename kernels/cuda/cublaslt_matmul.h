// cuBLASLt products with their descriptors and heuristic-chosen algorithm cached
// per problem (shape, layouts, types, epilogue, operand alignment), and one
// 32 MiB workspace for the stream they run on.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>

#include "core/memory.h"
#include "kernels/cuda/device_memory.h"

namespace mixgpt::cuda {

// One product in cuBLASLt's column-major terms:
//   D (m,n) = op(A) (m,k) · op(B) (k,n) [+ bias (m)] [+ D]
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
    cudaDataType input_type = CUDA_R_32F;   // A and B
    cudaDataType output_type = CUDA_R_32F;  // C, D and bias
    cublasComputeType_t compute_type = CUBLAS_COMPUTE_32F;
    const void* bias = nullptr;  // (m), or null for none
    bool accumulate = false;     // D += product instead of D = product
};

class LtMatmulRunner {
public:
    static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

    LtMatmulRunner(DeviceAllocator& allocator, cudaStream_t stream);
    ~LtMatmulRunner();
    LtMatmulRunner(const LtMatmulRunner&) = delete;
    LtMatmulRunner& operator=(const LtMatmulRunner&) = delete;

    // Enqueues the product on the stream. Returns false, enqueuing nothing, when cuBLASLt has
    // no algorithm for it (some type and alignment combinations); throws on errors.
    bool try_run(const LtProduct& product);

private:
    using Key = std::array<int64_t, 17>;
    struct Plan {
        cublasLtMatmulDesc_t operation = nullptr;
        cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
        cublasLtMatmulAlgo_t algorithm{};
        bool has_algorithm = false;
    };

    static Key key_of(const LtProduct& product);
    Plan make_plan(const LtProduct& product);
    static void destroy(Plan& plan);

    cudaStream_t stream_;
    cublasLtHandle_t handle_ = nullptr;
    Buffer workspace_;
    std::map<Key, Plan> plans_;
};

}  // namespace mixgpt::cuda
