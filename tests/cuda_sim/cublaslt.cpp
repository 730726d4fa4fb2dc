// The part of cuBLASLt that kernels/cuda/cublaslt_matmul.cpp calls, for the simulator, written
// from cuBLASLt's documented semantics (column-major matrices; D = alpha op(A) op(B) + beta C
// [+ bias broadcast along D's columns]) rather than from mixgpt's use of it:
//   - attribute values must have the size of the attribute's type, as cuBLASLt checks;
//   - the heuristic offers one algorithm for the documented type combinations and refuses the
//     others (CUBLAS_STATUS_NOT_SUPPORTED); the algorithm remembers the operand alignments it was
//     chosen for, and a product whose pointers are less aligned is refused; a test or the
//     environment can make it refuse more, as the real library may (cublaslt_refusals.h);
//   - layouts must agree on m, n and k, and every leading dimension must cover its rows;
//   - FP8 operands (E4M3, E5M2) only as cuBLASLt's documentation allows them: on a device of
//     compute capability 8.9 or newer, compute type CUBLAS_COMPUTE_32F with fp32 scale, A
//     transposed and B not (the "TN" format), not both E5M2, D (and C) bf16, fp16 or fp32, the
//     bias bf16 (fp16 with fp16 D), K and every leading dimension a multiple of 16 bytes, m·D's
//     size too, and the operands 16-byte aligned; A and B scale pointers multiply the product.
//     A scale pointer not 16-byte aligned is refused by the product (NOT_SUPPORTED), after the
//     heuristic offered an algorithm: undocumented, what cuBLASLt 13.1 did on an H200
//     (bench/results/2026-11-28-h200/).
//     Anything else is refused as the library refuses it (NOT_SUPPORTED from the heuristic,
//     INVALID_VALUE from the product). FP8 outputs (D scale and D amax pointers) are not
//     simulated and are refused: mixgpt's FP8 products write bf16, fp16 or fp32.
// Products accumulate in fp32 as on a GPU, in the simulated device's tensor-core arithmetic
// (tests/cuda_sim/tensor_cores.h; see `compute`), so a GEMM's rounding is the GPU's. A product runs when its stream gets there (runtime.h); what it needs is
// read when it is asked for, and the scales' values when it runs. A strided batch (the layouts'
// BATCH_COUNT and STRIDED_BATCH_OFFSET) is its products one after another.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "core/fp8.h"
#include "kernels/cuda_libraries.h"
#include "kernels/tensor_core_model.h"
#include "tests/cuda_sim/cublaslt_refusals.h"
#include "tests/cuda_sim/device_limits.h"
#include "tests/cuda_sim/runtime.h"
#include "tests/cuda_sim/tensor_cores.h"

namespace {

struct MatmulDesc {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    int32_t transpose_a = CUBLAS_OP_N, transpose_b = CUBLAS_OP_N;
    uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    int32_t bias_type = -1;  // -1: D's type
    const void* bias = nullptr;
    const float* a_scale = nullptr;  // FP8 only; null: 1
    const float* b_scale = nullptr;
};

struct Layout {
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld;
    int32_t batch_count = 1;   // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
    int64_t batch_stride = 0;  // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, in elements
};

struct Preference {
    uint64_t max_workspace = 0;
    uint32_t alignment[4] = {256, 256, 256, 256};  // A, B, C, D
};

// What an algorithm records in cublasLtMatmulAlgo_t::data.
struct Algorithm {
    uint64_t tag;
    uint32_t alignment[4];
};
constexpr uint64_t kAlgorithmTag = 0x6d6978677074ull;

template <typename Opaque, typename Ours>
Ours* ours(Opaque* handle) {
    return reinterpret_cast<Ours*>(handle);
}

template <typename T>
cublasStatus_t read_value(T& out, const void* buffer, size_t bytes) {
    if (buffer == nullptr || bytes != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&out, buffer, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}

uint32_t alignment_of(const void* pointer) {
    const auto address = reinterpret_cast<uintptr_t>(pointer);
    uint32_t alignment = 1;
    while (alignment < 256 && address % (2 * alignment) == 0) alignment *= 2;
    return alignment;
}

bool is_fp8(cudaDataType type) { return type == CUDA_R_8F_E4M3 || type == CUDA_R_8F_E5M2; }

size_t type_size(cudaDataType type) {
    switch (type) {
        case CUDA_R_32F:
            return 4;
        case CUDA_R_16F:
        case CUDA_R_16BF:
            return 2;
        default:
            return 1;
    }
}

bool supported_types(const MatmulDesc& op, cudaDataType a, cudaDataType b, cudaDataType cd) {
    if (op.scale != CUDA_R_32F) return false;
    if (is_fp8(a) || is_fp8(b)) {
        const mixgpt::cuda_sim::DeviceLimits& device = mixgpt::cuda_sim::device_limits();
        return device.major * 10 + device.minor >= 89 && op.compute == CUBLAS_COMPUTE_32F && is_fp8(a) &&
               is_fp8(b) && !(a == CUDA_R_8F_E5M2 && b == CUDA_R_8F_E5M2) &&
               (cd == CUDA_R_16BF || cd == CUDA_R_16F || cd == CUDA_R_32F);
    }
    if (a != b || op.a_scale != nullptr || op.b_scale != nullptr) return false;
    if (op.compute == CUBLAS_COMPUTE_32F_FAST_TF32) return a == CUDA_R_32F && cd == CUDA_R_32F;
    if (op.compute != CUBLAS_COMPUTE_32F) return false;
    if (a == CUDA_R_32F) return cd == CUDA_R_32F;
    if (a == CUDA_R_16F || a == CUDA_R_16BF) return cd == a || cd == CUDA_R_32F;
    return false;
}

// FP8's layout rules ("To use FP8 kernels ... A must be transposed and B non-transposed (the TN
// format)"; all matrix dimensions and leading dimensions as Tensor Core Usage lists them, which
// for FP8 are requirements: ((op_A == N ? m : k) · size_A), ((op_B == N ? k : n) · size_B),
// m · size_C and every ld · size a multiple of 16 bytes).
bool fp8_layout_allowed(const MatmulDesc& op, const Layout& a, const Layout& b, const Layout& d, uint64_t m,
                        uint64_t k) {
    if (op.transpose_a != CUBLAS_OP_T || op.transpose_b != CUBLAS_OP_N) return false;
    const auto multiple_of_16 = [](uint64_t bytes) { return bytes % 16 == 0; };
    return multiple_of_16(k) && multiple_of_16(static_cast<uint64_t>(a.ld)) &&
           multiple_of_16(static_cast<uint64_t>(b.ld)) && multiple_of_16(m * type_size(d.type)) &&
           multiple_of_16(static_cast<uint64_t>(d.ld) * type_size(d.type));
}

// The bias type a product with D of type `d` takes: D's, but bf16 for FP8 products with fp32 D.
cudaDataType expected_bias_type(cudaDataType a, cudaDataType d) {
    return is_fp8(a) && d == CUDA_R_32F ? CUDA_R_16BF : d;
}

// m, n, k of the product, or false when the layouts disagree.
bool product_shape(const MatmulDesc& op, const Layout& a, const Layout& b, const Layout& c, const Layout& d,
                   uint64_t& m, uint64_t& n, uint64_t& k) {
    m = op.transpose_a == CUBLAS_OP_N ? a.rows : a.cols;
    k = op.transpose_a == CUBLAS_OP_N ? a.cols : a.rows;
    const uint64_t kb = op.transpose_b == CUBLAS_OP_N ? b.rows : b.cols;
    n = op.transpose_b == CUBLAS_OP_N ? b.cols : b.rows;
    const auto covers = [](const Layout& l) { return l.ld >= 1 && static_cast<uint64_t>(l.ld) >= l.rows; };
    // A strided batch: every operand has the batch's count (cuBLASLt's rule for C and D; A and B are
    // held to it too, as mixgpt never broadcasts one matrix over a batch).
    const auto batched = [&](const Layout& l) {
        return l.batch_count == d.batch_count && l.batch_count >= 1;
    };
    return kb == k && c.rows == m && c.cols == n && d.rows == m && d.cols == n && covers(a) && covers(b) &&
           covers(c) && covers(d) && c.type == d.type && batched(a) && batched(b) && batched(c);
}

bool valid_operation(const MatmulDesc& op) {
    return (op.transpose_a == CUBLAS_OP_N || op.transpose_a == CUBLAS_OP_T) &&
           (op.transpose_b == CUBLAS_OP_N || op.transpose_b == CUBLAS_OP_T) &&
           (op.epilogue == CUBLASLT_EPILOGUE_DEFAULT || op.epilogue == CUBLASLT_EPILOGUE_BIAS);
}

double load(const void* base, cudaDataType type, int64_t index) {
    switch (type) {
        case CUDA_R_32F:
            return static_cast<const float*>(base)[index];
        case CUDA_R_16F:
            return __half2float(static_cast<const __half*>(base)[index]);
        case CUDA_R_16BF:
            return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[index]);
        case CUDA_R_8F_E4M3:
            return mixgpt::e4m3_bits_to_float(static_cast<const uint8_t*>(base)[index]);
        case CUDA_R_8F_E5M2:
            return mixgpt::e5m2_bits_to_float(static_cast<const uint8_t*>(base)[index]);
        default:
            return 0;
    }
}

void store(void* base, cudaDataType type, int64_t index, double value) {
    const float rounded = static_cast<float>(value);
    switch (type) {
        case CUDA_R_32F:
            static_cast<float*>(base)[index] = rounded;
            return;
        case CUDA_R_16F:
            static_cast<__half*>(base)[index] = __float2half_rn(rounded);
            return;
        case CUDA_R_16BF:
            static_cast<__nv_bfloat16*>(base)[index] = __float2bfloat16_rn(rounded);
            return;
        default:
            return;
    }
}

// One product's descriptors, and its m, n, k once validated.
struct Problem {
    const MatmulDesc& op;
    const Layout &a, &b, &c, &d;
    uint64_t m = 0, n = 0, k = 0;
};

Problem problem_of(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                   cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d) {
    return {*ours<cublasLtMatmulDescOpaque_t, MatmulDesc>(desc),
            *ours<cublasLtMatrixLayoutOpaque_t, Layout>(a), *ours<cublasLtMatrixLayoutOpaque_t, Layout>(b),
            *ours<cublasLtMatrixLayoutOpaque_t, Layout>(c), *ours<cublasLtMatrixLayoutOpaque_t, Layout>(d)};
}

// The heuristic's view of a validated problem, for the refusals a test or the environment asks
// for (cublaslt_refusals.h).
mixgpt::cuda_sim::HeuristicQuery query_of(const Problem& p) {
    return {p.a.type,
            p.b.type,
            p.d.type,
            p.op.compute,
            p.op.epilogue == CUBLASLT_EPILOGUE_BIAS,
            p.op.transpose_a == CUBLAS_OP_T,
            p.op.transpose_b == CUBLAS_OP_T,
            p.m,
            p.n,
            p.k,
            p.a.ld,
            p.b.ld,
            p.d.ld};
}

// CUBLAS_STATUS_SUCCESS (and m, n, k set) when cuBLASLt would take the problem.
cublasStatus_t validate(Problem& p) {
    if (!valid_operation(p.op) || !product_shape(p.op, p.a, p.b, p.c, p.d, p.m, p.n, p.k))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!supported_types(p.op, p.a.type, p.b.type, p.d.type)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (is_fp8(p.a.type) && !fp8_layout_allowed(p.op, p.a, p.b, p.d, p.m, p.k))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    return CUBLAS_STATUS_SUCCESS;
}

// One product as cublasLtMatmul was asked for it.
struct Product {
    std::optional<mixgpt::TensorCoreModel> tensor_cores;  // none: CUDA cores, one fp32 FMA per product
    bool tf32_inputs;                // fp32 operands read as TF32
    const float *a_scale, *b_scale;  // FP8: read when the product runs; null: 1
    bool transpose_a, transpose_b;
    Layout a, b, c, d;
    uint64_t m, n, k;
    float alpha, beta;
    const void* bias;  // null: no bias epilogue
    cudaDataType bias_type;
    const void *a_data, *b_data, *c_data;
    void* d_data;
};

// The tensor-core arithmetic of a product with inputs of type `ab` (tests/cuda_sim/tensor_cores.h:
// the simulated device's model, whose steps are mma's k for TF32, BF16, FP16 and wgmma's for FP8),
// or none for FP32 inputs without TF32, which cuBLAS multiplies on the CUDA cores.
std::optional<mixgpt::TensorCoreModel> tensor_cores_for(const MatmulDesc& op, cudaDataType ab) {
    using mixgpt::TensorCoreInput;
    using mixgpt::cuda_sim::simulated_tensor_cores;
    if (op.compute == CUBLAS_COMPUTE_32F_FAST_TF32) return simulated_tensor_cores(TensorCoreInput::tf32);
    switch (ab) {
        case CUDA_R_16BF:
            return simulated_tensor_cores(TensorCoreInput::bf16);
        case CUDA_R_16F:
            return simulated_tensor_cores(TensorCoreInput::fp16);
        case CUDA_R_8F_E4M3:
            return simulated_tensor_cores(TensorCoreInput::e4m3);
        case CUDA_R_8F_E5M2:
            return simulated_tensor_cores(TensorCoreInput::e5m2);
        default:
            return std::nullopt;
    }
}

// One element of op(A) op(B) from a row of op(A) and a column of op(B), each k contiguous: an fp32
// accumulator along k, as a GPU's GEMM keeps one, in the tensor cores' arithmetic, or with one
// fmaf per product on the CUDA cores.
float accumulate(const Product& p, const mixgpt::TensorCoreOperand* row, const mixgpt::TensorCoreOperand* column) {
    if (p.tensor_cores) return mixgpt::tensor_core_dot(*p.tensor_cores, row, column, 1, p.k, 0.f);
    float accumulator = 0.f;
    for (uint64_t l = 0; l < p.k; ++l)
        accumulator = std::fma(static_cast<float>(row[l].value), static_cast<float>(column[l].value), accumulator);
    return accumulator;
}

// op(A) (m, k) and op(B)^T (n, k) as operands of the tensor-core model, row-major, then D column
// by column; the epilogue in fp32 (alpha, beta C, bias), rounded to D's type once.
void compute_one(const Product& p) {
    const auto operand = [&](const void* data, cudaDataType type, int64_t index) {
        double value = load(data, type, index);
        if (p.tf32_inputs) value = mixgpt::truncate_to_tf32(static_cast<float>(value));
        // The CUDA cores' products read only the value.
        return p.tensor_cores ? mixgpt::tensor_core_input(*p.tensor_cores, value) : mixgpt::TensorCoreOperand{value, 0};
    };
    std::vector<mixgpt::TensorCoreOperand> op_a(p.m * p.k), op_b_t(p.n * p.k);
    for (uint64_t i = 0; i < p.m; ++i)
        for (uint64_t l = 0; l < p.k; ++l)
            op_a[i * p.k + l] = operand(p.a_data, p.a.type,
                                        static_cast<int64_t>(p.transpose_a ? l + i * p.a.ld : i + l * p.a.ld));
    for (uint64_t j = 0; j < p.n; ++j)
        for (uint64_t l = 0; l < p.k; ++l)
            op_b_t[j * p.k + l] = operand(p.b_data, p.b.type,
                                          static_cast<int64_t>(p.transpose_b ? j + l * p.b.ld : l + j * p.b.ld));
    // FP8: alpha · scale_A · scale_B as one fp32 factor (kernels/cpu/fp8_matmul.h's order).
    float alpha = p.alpha;
    if (p.a_scale != nullptr || p.b_scale != nullptr) {
        const float a_scale = p.a_scale != nullptr ? *p.a_scale : 1.f;
        const float b_scale = p.b_scale != nullptr ? *p.b_scale : 1.f;
        alpha = p.alpha * (a_scale * b_scale);
    }
    for (uint64_t j = 0; j < p.n; ++j)
        for (uint64_t i = 0; i < p.m; ++i) {
            float value = alpha * accumulate(p, &op_a[i * p.k], &op_b_t[j * p.k]);
            if (p.beta != 0.f)
                value = std::fma(
                    p.beta,
                    static_cast<float>(load(p.c_data, p.c.type, static_cast<int64_t>(i + j * p.c.ld))),
                    value);
            if (p.bias != nullptr)
                value += static_cast<float>(load(p.bias, p.bias_type, static_cast<int64_t>(i)));
            store(p.d_data, p.d.type, static_cast<int64_t>(i + j * p.d.ld), value);
        }
}

// Element `index` of an operand of `type` at `base`, as a pointer.
const void* element(const void* base, cudaDataType type, int64_t index) {
    switch (type) {
        case CUDA_R_32F:
            return static_cast<const float*>(base) + index;
        case CUDA_R_16F:
        case CUDA_R_16BF:
            return static_cast<const uint16_t*>(base) + index;
        default:
            return static_cast<const uint8_t*>(base) + index;
    }
}

// Each matrix of a strided batch in turn, in batch order.
void compute(const Product& p) {
    for (int32_t batch = 0; batch < p.d.batch_count; ++batch) {
        Product one = p;
        one.a_data = element(p.a_data, p.a.type, batch * p.a.batch_stride);
        one.b_data = element(p.b_data, p.b.type, batch * p.b.batch_stride);
        if (p.c_data != nullptr) one.c_data = element(p.c_data, p.c.type, batch * p.c.batch_stride);
        one.d_data = const_cast<void*>(element(p.d_data, p.d.type, batch * p.d.batch_stride));
        compute_one(one);
    }
}

cublasStatus_t refuse(const char* call, const char* why, cublasStatus_t status) {
    std::fprintf(stderr, "cuda_sim: %s: %s\n", call, why);
    return status;
}

}  // namespace

namespace mixgpt {

std::string cublaslt_library_status() {
    return "the CUDA simulator's stand-in (tests/cuda_sim/cublaslt.cpp)";
}

}  // namespace mixgpt

extern "C" {

const char* cublasLtGetStatusString(cublasStatus_t status) {
    switch (status) {
        case CUBLAS_STATUS_SUCCESS:
            return "success (cuda_sim cuBLASLt)";
        case CUBLAS_STATUS_INVALID_VALUE:
            return "invalid value (cuda_sim cuBLASLt)";
        case CUBLAS_STATUS_NOT_SUPPORTED:
            return "not supported (cuda_sim cuBLASLt)";
        default:
            return "error (cuda_sim cuBLASLt)";
    }
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
    *handle = reinterpret_cast<cublasLtHandle_t>(new int(0));
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
    delete reinterpret_cast<int*>(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
    mixgpt::cuda_sim::count_matmul_plan();
    *desc = reinterpret_cast<cublasLtMatmulDesc_t>(new MatmulDesc{compute, scale});
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
    delete ours<cublasLtMatmulDescOpaque_t, MatmulDesc>(desc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attribute, const void* buffer,
                                              size_t bytes) {
    MatmulDesc& op = *ours<cublasLtMatmulDescOpaque_t, MatmulDesc>(desc);
    switch (attribute) {
        case CUBLASLT_MATMUL_DESC_TRANSA:
            return read_value(op.transpose_a, buffer, bytes);
        case CUBLASLT_MATMUL_DESC_TRANSB:
            return read_value(op.transpose_b, buffer, bytes);
        case CUBLASLT_MATMUL_DESC_EPILOGUE:
            return read_value(op.epilogue, buffer, bytes);
        case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
            return read_value(op.bias_type, buffer, bytes);
        case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
            return read_value(op.bias, buffer, bytes);
        case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
            return read_value(op.a_scale, buffer, bytes);
        case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
            return read_value(op.b_scale, buffer, bytes);
        default:
            return refuse("cublasLtMatmulDescSetAttribute", "attribute not simulated",
                          CUBLAS_STATUS_NOT_SUPPORTED);
    }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    *layout = reinterpret_cast<cublasLtMatrixLayout_t>(new Layout{type, rows, cols, ld});
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attribute, const void* buffer,
                                                size_t bytes) {
    Layout& l = *ours<cublasLtMatrixLayoutOpaque_t, Layout>(layout);
    switch (attribute) {
        case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
            return read_value(l.batch_count, buffer, bytes);
        case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
            return read_value(l.batch_stride, buffer, bytes);
        default:
            return refuse("cublasLtMatrixLayoutSetAttribute", "attribute not simulated",
                          CUBLAS_STATUS_NOT_SUPPORTED);
    }
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    delete ours<cublasLtMatrixLayoutOpaque_t, Layout>(layout);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* preference) {
    *preference = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
    delete ours<cublasLtMatmulPreferenceOpaque_t, Preference>(preference);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t preference,
                                                    cublasLtMatmulPreferenceAttributes_t attribute,
                                                    const void* buffer, size_t bytes) {
    Preference& p = *ours<cublasLtMatmulPreferenceOpaque_t, Preference>(preference);
    switch (attribute) {
        case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
            return read_value(p.max_workspace, buffer, bytes);
        case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
            return read_value(p.alignment[0], buffer, bytes);
        case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
            return read_value(p.alignment[1], buffer, bytes);
        case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
            return read_value(p.alignment[2], buffer, bytes);
        case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
            return read_value(p.alignment[3], buffer, bytes);
        default:
            return refuse("cublasLtMatmulPreferenceSetAttribute", "attribute not simulated",
                          CUBLAS_STATUS_NOT_SUPPORTED);
    }
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a_desc, cublasLtMatrixLayout_t b_desc,
                                              cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* found) {
    mixgpt::cuda_sim::count_matmul_plan();
    Problem problem = problem_of(desc, a_desc, b_desc, c_desc, d_desc);
    const Preference& p = *ours<cublasLtMatmulPreferenceOpaque_t, Preference>(preference);
    *found = 0;
    if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
    if (const cublasStatus_t status = validate(problem); status != CUBLAS_STATUS_SUCCESS) return status;
    // FP8 kernels need every operand 16-byte aligned.
    if (is_fp8(problem.a.type) && *std::min_element(p.alignment, p.alignment + 4) < 16)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    results[0] = cublasLtMatmulHeuristicResult_t{};
    if (const auto refusal = mixgpt::cuda_sim::refusal_for(query_of(problem))) {
        if (*refusal == mixgpt::cuda_sim::RefusalForm::not_supported) return CUBLAS_STATUS_NOT_SUPPORTED;
        if (*refusal == mixgpt::cuda_sim::RefusalForm::failed_result) {
            results[0].state = CUBLAS_STATUS_NOT_SUPPORTED;
            *found = 1;
        }
        return CUBLAS_STATUS_SUCCESS;
    }
    const Algorithm algorithm{kAlgorithmTag,
                              {p.alignment[0], p.alignment[1], p.alignment[2], p.alignment[3]}};
    static_assert(sizeof algorithm <= sizeof results[0].algo.data, "fits the algorithm's opaque data");
    std::memcpy(results[0].algo.data, &algorithm, sizeof algorithm);
    results[0].state = CUBLAS_STATUS_SUCCESS;
    *found = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* a_data, cublasLtMatrixLayout_t a_desc, const void* b_data,
                              cublasLtMatrixLayout_t b_desc, const void* beta, const void* c_data,
                              cublasLtMatrixLayout_t c_desc, void* d_data, cublasLtMatrixLayout_t d_desc,
                              const cublasLtMatmulAlgo_t* algo, void*, size_t, cudaStream_t stream) {
    const char* call = "cublasLtMatmul";
    mixgpt::cuda_sim::count_matmul();
    Problem problem = problem_of(desc, a_desc, b_desc, c_desc, d_desc);
    if (const cublasStatus_t status = validate(problem); status != CUBLAS_STATUS_SUCCESS)
        return refuse(call, "layouts, operation or types not accepted", status);
    const MatmulDesc& op = problem.op;
    const Layout &a = problem.a, &b = problem.b, &c = problem.c, &d = problem.d;
    const uint64_t m = problem.m, n = problem.n, k = problem.k;
    Algorithm algorithm;
    if (algo == nullptr) return refuse(call, "no algorithm", CUBLAS_STATUS_INVALID_VALUE);
    std::memcpy(&algorithm, algo->data, sizeof algorithm);
    if (algorithm.tag != kAlgorithmTag)
        return refuse(call, "not a heuristic's algorithm", CUBLAS_STATUS_INVALID_VALUE);
    const void* operands[4] = {a_data, b_data, c_data, d_data};
    for (int i = 0; i < 4; ++i)
        if (alignment_of(operands[i]) < algorithm.alignment[i])
            return refuse(call, "an operand is less aligned than the algorithm was chosen for",
                          CUBLAS_STATUS_INVALID_VALUE);
    const bool with_bias = op.epilogue == CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType bias_type = op.bias_type < 0 ? d.type : static_cast<cudaDataType>(op.bias_type);
    if (with_bias && (op.bias == nullptr || bias_type != expected_bias_type(a.type, d.type)))
        return refuse(call, "bias epilogue without a bias of the type D takes", CUBLAS_STATUS_INVALID_VALUE);
    for (const float* scale : {op.a_scale, op.b_scale})
        if (scale != nullptr && alignment_of(scale) < 16)
            return refuse(call, "an FP8 scale pointer not 16-byte aligned", CUBLAS_STATUS_NOT_SUPPORTED);
    float alpha_value, beta_value;
    std::memcpy(&alpha_value, alpha, sizeof alpha_value);
    std::memcpy(&beta_value, beta, sizeof beta_value);
    // What the product needs is read now, as cuBLASLt reads its descriptors when called; the
    // product runs when the stream gets there.
    const Product product{tensor_cores_for(op, a.type),
                          op.compute == CUBLAS_COMPUTE_32F_FAST_TF32,
                          op.a_scale,
                          op.b_scale,
                          op.transpose_a == CUBLAS_OP_T,
                          op.transpose_b == CUBLAS_OP_T,
                          a,
                          b,
                          c,
                          d,
                          m,
                          n,
                          k,
                          alpha_value,
                          beta_value,
                          with_bias ? op.bias : nullptr,
                          bias_type,
                          a_data,
                          b_data,
                          c_data,
                          d_data};
    mixgpt::cuda_sim::enqueue_compute(stream, [product] { compute(product); });
    return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
