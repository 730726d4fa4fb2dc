#include "kernels/cuda/cublaslt_matmul.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda_check.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/cuda/cublaslt_fallback.h"

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

// The per-call pointers: bias and the FP8 scales. The heuristic reads the bias's value for the
// alignment it may assume, so they are set before the heuristic too, and plans are keyed by that
// alignment and by which scales are present.
void set_call_pointers(cublasLtMatmulDesc_t operation, const LtProduct& product) {
    if (product.bias != nullptr) set_attribute(operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, product.bias);
    if (product.a_scale != nullptr)
        set_attribute(operation, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, product.a_scale);
    if (product.b_scale != nullptr)
        set_attribute(operation, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, product.b_scale);
}

}  // namespace

cudaDataType b_type_of(const LtProduct& product) {
    return product.b_type < 0 ? product.input_type : static_cast<cudaDataType>(product.b_type);
}

cudaDataType bias_type_of(const LtProduct& product) {
    return product.bias_type < 0 ? product.output_type : static_cast<cudaDataType>(product.bias_type);
}

LtMatmulRunner::LtMatmulRunner(DeviceAllocator& allocator, cudaStream_t stream)
    : stream_(stream), scratch_(allocator, stream) {
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
            alignment_of(p.bias),
            static_cast<int64_t>(b_type_of(p)),
            static_cast<int64_t>(bias_type_of(p)),
            (p.a_scale != nullptr ? 1 : 0) + (p.b_scale != nullptr ? 2 : 0),
            p.c != nullptr,
            alignment_of(p.c),
            p.batch,
            p.stride_a,
            p.stride_b,
            p.stride_d};
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
                          static_cast<int32_t>(bias_type_of(p)));
        set_call_pointers(plan.operation, p);

        // Stored shapes: A (m,k) or (k,m) transposed, B (k,n) or (n,k) transposed.
        const auto u64 = [](int64_t value) { return static_cast<uint64_t>(value); };
        CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.a, p.input_type, u64(p.transpose_a ? p.k : p.m),
                                                u64(p.transpose_a ? p.m : p.k), p.lda));
        CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.b, b_type_of(p), u64(p.transpose_b ? p.n : p.k),
                                                u64(p.transpose_b ? p.k : p.n), p.ldb));
        CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.c, p.output_type, u64(p.m), u64(p.n), p.ldd));
        CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.d, p.output_type, u64(p.m), u64(p.n), p.ldd));
        if (p.batch > 1) {
            const std::pair<cublasLtMatrixLayout_t, int64_t> strided[] = {
                {plan.a, p.stride_a}, {plan.b, p.stride_b}, {plan.c, p.stride_d}, {plan.d, p.stride_d}};
            for (const auto& [layout, stride] : strided) {
                const int32_t count = p.batch;
                CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                              &count, sizeof count));
                CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
                    layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
            }
        }

        CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
        set_preference(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, kWorkspaceBytes);
        set_preference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                       static_cast<uint32_t>(alignment_of(p.a)));
        set_preference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                       static_cast<uint32_t>(alignment_of(p.b)));
        set_preference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                       static_cast<uint32_t>(alignment_of(p.c != nullptr ? p.c : p.d)));
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

LtMatmulRunner::Plan& LtMatmulRunner::plan_for(const LtProduct& product) {
    const Key key = key_of(product);
    auto found = plans_.find(key);
    if (found == plans_.end()) found = plans_.emplace(key, make_plan(product)).first;
    return found->second;
}

LtRoute LtMatmulRunner::choose_route(const LtProduct& product, const char* op) {
    if (plan_for(product).has_algorithm) return LtRoute::as_asked;
    MIXGPT_REQUIRE(
        product.c == nullptr && product.alpha == 1.f && product.batch == 1,
        format("%s: cuBLASLt offers no algorithm for %s, and a product with alpha, a separate C or "
               "a batch has no fallback route",
               op, describe_product(product).c_str()));
    const std::vector<LtRoute> routes = fallback_routes(product);
    std::string tried;
    for (const LtRoute route : routes) {
        void* scratch = scratch_.get(ScratchSlot::cublaslt_fallback, fallback_bytes(product, route));
        if (plan_for(rerouted_product(product, route, scratch)).has_algorithm) {
            log_warning(format("%s: cuBLASLt offers no algorithm for %s; computing it with %s", op,
                               describe_product(product).c_str(), route_name(product, route).c_str()));
            return route;
        }
        tried += (tried.empty() ? ", nor with " : " or with ") + route_name(product, route);
    }
    throw Error(format("%s: cuBLASLt offers no algorithm for %s%s", op, describe_product(product).c_str(),
                       tried.c_str()));
}

void LtMatmulRunner::run(const LtProduct& product, const char* op) {
    const Key key = key_of(product);
    auto chosen = routes_.find(key);
    if (chosen == routes_.end()) chosen = routes_.emplace(key, choose_route(product, op)).first;
    const LtRoute route = chosen->second;
    if (route == LtRoute::as_asked) {
        try_run(product);
        return;
    }
    const LtProduct rerouted = rerouted_product(
        product, route, scratch_.get(ScratchSlot::cublaslt_fallback, fallback_bytes(product, route)));
    widen_operands(product, rerouted, stream_);
    try_run(rerouted);
    finish_product(product, rerouted, stream_);
}

bool LtMatmulRunner::try_run(const LtProduct& product) {
    Plan& plan = plan_for(product);
    if (!plan.has_algorithm) return false;
    set_call_pointers(plan.operation, product);
    MIXGPT_REQUIRE(product.c == nullptr || (product.bias == nullptr && !product.accumulate),
                   "cuBLASLt product: a separate C takes neither a bias nor accumulate");
    const float alpha = product.alpha;
    const float beta = product.c != nullptr ? product.beta : product.accumulate ? 1.f : 0.f;
    CUBLAS_CHECK(cublasLtMatmul(handle_, plan.operation, &alpha, product.a, plan.a, product.b, plan.b, &beta,
                                product.c != nullptr ? product.c : product.d, plan.c, product.d, plan.d,
                                &plan.algorithm, workspace_.data(), kWorkspaceBytes, stream_));
#ifdef MIXGPT_DEBUG_SYNC
    CUDA_CHECK(cudaStreamSynchronize(stream_));
#endif
    return true;
}

cudaDataType cuda_type_of(Fp8Format format) {
    return format == Fp8Format::e4m3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

namespace {

// cuBLASLt's FP8 rules (kernels/cuda/README.md), each checked with a message naming it.
void check_fp8_gemm(const Fp8Gemm& g) {
    const std::string where = "cuda fp8 gemm (M " + std::to_string(g.M) + ", N " + std::to_string(g.N) +
                              ", K " + std::to_string(g.K) + "): ";
    MIXGPT_REQUIRE(g.M > 0 && g.N > 0 && g.K > 0, where + "every dimension must be positive");
    MIXGPT_REQUIRE(g.a != nullptr && g.b != nullptr && g.out != nullptr && g.a_scale_inverse != nullptr &&
                       g.b_scale_inverse != nullptr,
                   where + "a, b, out and both scale inverses must be device pointers, not null");
    MIXGPT_REQUIRE(!(g.a_format == Fp8Format::e5m2 && g.b_format == Fp8Format::e5m2),
                   where + "e5m2 x e5m2 is not in cuBLASLt's FP8 table (one operand must be e4m3)");
    MIXGPT_REQUIRE(
        g.out_dtype == DType::bf16 || g.out_dtype == DType::f16 || g.out_dtype == DType::f32,
        where + "out is " + dtype_name(g.out_dtype) + "; cuBLASLt's FP8 products write bf16, fp16 or fp32");
    MIXGPT_REQUIRE(g.K % 16 == 0,
                   where +
                       "K must be a multiple of 16 (cuBLASLt FP8: the leading dimension of both "
                       "operands, K one-byte elements, a multiple of 16 bytes)");
    MIXGPT_REQUIRE(g.N * static_cast<int64_t>(dtype_size(g.out_dtype)) % 16 == 0,
                   where +
                       "N times the size of out's element must be a multiple of 16 bytes (cuBLASLt FP8: the "
                       "output's leading dimension)");
    for (const void* pointer : {static_cast<const void*>(g.a), static_cast<const void*>(g.b),
                                static_cast<const void*>(g.out), g.bias})
        MIXGPT_REQUIRE(pointer == nullptr || reinterpret_cast<uintptr_t>(pointer) % 16 == 0,
                       where + "a, b, out and bias must be 16-byte aligned (cuBLASLt FP8)");
    for (const float* scale : {g.a_scale_inverse, g.b_scale_inverse})
        MIXGPT_REQUIRE(reinterpret_cast<uintptr_t>(scale) % 16 == 0,
                       where + "both scale inverses must be 16-byte aligned (cuBLASLt FP8 refuses the product "
                               "at cublasLtMatmul otherwise, seen on an H200)");
}

}  // namespace

void run_fp8_gemm(LtMatmulRunner& runner, const Fp8Gemm& g) {
    check_fp8_gemm(g);
    // out^T (N,M) = B (N,K) · A^T (K,M) in column-major terms: cuBLASLt's A is our B, stored (N,K)
    // row-major, i.e. (K,N) column-major and transposed; its B is our A, (K,M) column-major as is.
    LtProduct p;
    p.a = g.b;
    p.transpose_a = true;
    p.lda = g.K;
    p.b = g.a;
    p.transpose_b = false;
    p.ldb = g.K;
    p.d = g.out;
    p.ldd = g.N;
    p.m = g.N;
    p.n = g.M;
    p.k = g.K;
    p.input_type = cuda_type_of(g.b_format);
    p.b_type = static_cast<int>(cuda_type_of(g.a_format));
    p.output_type = g.out_dtype == DType::f32   ? CUDA_R_32F
                    : g.out_dtype == DType::f16 ? CUDA_R_16F
                                                : CUDA_R_16BF;
    p.compute_type = CUBLAS_COMPUTE_32F;
    p.bias = g.bias;
    p.bias_type = g.out_dtype == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
    p.accumulate = g.accumulate;
    p.a_scale = g.b_scale_inverse;
    p.b_scale = g.a_scale_inverse;
    runner.run(p, "cuda fp8 gemm");
}

}  // namespace mixgpt::cuda
