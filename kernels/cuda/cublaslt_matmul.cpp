#include "kernels/cuda/cublaslt_matmul.h"

#include <algorithm>

#include "core/cuda_check.h"
#include "core/log.h"

namespace mixgpt::cuda {
namespace {

// The largest power of two (at most 256) that divides the address: what the
// heuristic may assume about the operand's alignment.
int64_t alignment_of(const void* pointer) {
    const auto address = reinterpret_cast<uintptr_t>(pointer);
    if (address == 0) return 256;
    return static_cast<int64_t>(std::min<uintptr_t>(address & (~address + 1), 256));
}

cublasLtEpilogue_t epilogue_of(const LtProduct& product) {
    return product.bias != nullptr ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

template <typename T>
void set_attribute(cublasLtMatmulDesc_t operation, cublasLtMatmulDescAttributes_t attribute, const T& value) {
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(operation, attribute, &value, sizeof value));
}

template <typename T>
void set_preference(cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute,
                    const T& value) {
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value));
}

// The per-call bias pointer. The heuristic reads its value for the alignment it may assume, so it is
// set before the heuristic too, and plans are keyed by that alignment.
void set_bias_pointer(cublasLtMatmulDesc_t operation, const LtProduct& product) {
    if (product.bias != nullptr) set_attribute(operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, product.bias);
}

}  // namespace

LtMatmulRunner::LtMatmulRunner(DeviceAllocator& allocator, cudaStream_t stream) : stream_(stream) {
    workspace_ = allocator.allocate(kWorkspaceBytes);
    CUBLAS_CHECK(cublasLtCreate(&handle_));
}

LtMatmulRunner::~LtMatmulRunner() {
    for (auto& entry : plans_) destroy(entry.second);
    cublasLtDestroy(handle_);
}

LtMatmulRunner::Key LtMatmulRunner::key_of(const LtProduct& p) {
    return {p.transpose_a,
            p.transpose_b,
            p.m,
            p.n,
            p.k,
            p.lda,
            p.ldb,
            p.ldd,
            static_cast<int64_t>(p.input_type),
            static_cast<int64_t>(p.output_type),
            static_cast<int64_t>(p.compute_type),
            static_cast<int64_t>(epilogue_of(p)),
            p.accumulate,
            alignment_of(p.a),
            alignment_of(p.b),
            alignment_of(p.d),
            alignment_of(p.bias)};
}

void LtMatmulRunner::destroy(Plan& plan) {
    if (plan.a != nullptr) cublasLtMatrixLayoutDestroy(plan.a);
    if (plan.b != nullptr) cublasLtMatrixLayoutDestroy(plan.b);
    if (plan.c != nullptr) cublasLtMatrixLayoutDestroy(plan.c);
    if (plan.d != nullptr) cublasLtMatrixLayoutDestroy(plan.d);
    if (plan.operation != nullptr) cublasLtMatmulDescDestroy(plan.operation);
    plan = Plan();
}

LtMatmulRunner::Plan LtMatmulRunner::make_plan(const LtProduct& p) {
    Plan plan;
    cublasLtMatmulPreference_t preference = nullptr;
    try {
        CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.operation, p.compute_type, CUDA_R_32F));
        set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSA, p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N);
        set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSB, p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N);
        set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue_of(p));
        if (p.bias != nullptr)
            set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                          static_cast<int32_t>(p.output_type));
        set_bias_pointer(plan.operation, p);

        // Stored shapes: A (m,k) or (k,m) transposed, B (k,n) or (n,k) transposed.
        const auto u64 = [](int64_t value) { return static_cast<uint64_t>(value); };
        CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.a, p.input_type, u64(p.transpose_a ? p.k : p.m),
                                                u64(p.transpose_a ? p.m : p.k), p.lda));
        CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.b, p.input_type, u64(p.transpose_b ? p.n : p.k),
                                                u64(p.transpose_b ? p.k : p.n), p.ldb));
        CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.c, p.output_type, u64(p.m), u64(p.n), p.ldd));
        CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.d, p.output_type, u64(p.m), u64(p.n), p.ldd));

        CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
        set_preference(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, kWorkspaceBytes);
        set_preference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                       static_cast<uint32_t>(alignment_of(p.a)));
        set_preference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                       static_cast<uint32_t>(alignment_of(p.b)));
        set_preference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                       static_cast<uint32_t>(alignment_of(p.d)));
        set_preference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                       static_cast<uint32_t>(alignment_of(p.d)));

        cublasLtMatmulHeuristicResult_t result{};
        int found = 0;
        const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
            handle_, plan.operation, plan.a, plan.b, plan.c, plan.d, preference, 1, &result, &found);
        // NOT_SUPPORTED or INVALID_VALUE here mean this combination has no algorithm; the caller
        // reports the problem's shape.
        plan.has_algorithm =
            status == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
        if (!plan.has_algorithm)
            log_debug(format("cuBLASLt heuristic: no algorithm for m=%lld n=%lld k=%lld epilogue %d (%s)",
                             static_cast<long long>(p.m), static_cast<long long>(p.n),
                             static_cast<long long>(p.k), static_cast<int>(epilogue_of(p)),
                             cublasLtGetStatusString(status)));
        if (plan.has_algorithm) plan.algorithm = result.algo;
        CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(preference));
    } catch (...) {
        if (preference != nullptr) cublasLtMatmulPreferenceDestroy(preference);
        destroy(plan);
        throw;
    }
    return plan;
}

bool LtMatmulRunner::try_run(const LtProduct& product) {
    const Key key = key_of(product);
    auto found = plans_.find(key);
    if (found == plans_.end()) found = plans_.emplace(key, make_plan(product)).first;
    Plan& plan = found->second;
    if (!plan.has_algorithm) return false;
    set_bias_pointer(plan.operation, product);
    const float alpha = 1.f;
    const float beta = product.accumulate ? 1.f : 0.f;
    CUBLAS_CHECK(cublasLtMatmul(handle_, plan.operation, &alpha, product.a, plan.a, product.b, plan.b, &beta,
                                product.d, plan.c, product.d, plan.d, &plan.algorithm, workspace_.data(),
                                kWorkspaceBytes, stream_));
#ifdef MIXGPT_DEBUG_SYNC
    CUDA_CHECK(cudaStreamSynchronize(stream_));
#endif
    return true;
}

}  // namespace mixgpt::cuda
