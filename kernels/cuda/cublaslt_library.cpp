// cuBLASLt, loaded the first time mixgpt calls it instead of when the process starts. Linked
// directly, libcublasLt's initializers ran in every process, CPU runs and `mixgpt --help`
// included: 0.4 s and about 200 MiB of resident memory before main. This file defines the
// functions of cublasLt.h that mixgpt calls; each finds the library's own on its first call. The
// library is the one of the CUDA this binary was built with, found as core/cuda_library_search.h
// says. (The simulator defines the same functions itself, so this file is not part of its build.)
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>

#include "core/cuda_library_search.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/cuda_libraries.h"

// cuBLAS's major version is its toolkit's (libcublasLt.so.12 ships with CUDA 12, .so.13 with 13).
static_assert(CUBLAS_VER_MAJOR == CUDART_VERSION / 1000, "cuBLAS and the CUDA runtime are of one toolkit");

namespace {

const mixgpt::LoadedCudaLibrary& library() {
    static const mixgpt::LoadedCudaLibrary loaded({"cuBLASLt", "libcublasLt.so", CUDART_VERSION / 1000, CUDART_VERSION,
                                                   mixgpt::CudaOfLibrary::soname_major});
    return loaded;
}

template <typename Function>
Function* resolve(const char* name) {
    return reinterpret_cast<Function*>(library().symbol(name));
}

}  // namespace

namespace mixgpt {

std::string cublaslt_library_status() {
    try {
        const size_t code = cublasLtGetVersion();
        return format("%zu.%zu.%zu (%s)", code / 10000, code / 100 % 100, code % 100, library().path().c_str());
    } catch (const Error& error) {
        const std::string message = error.what(), title = "cuBLASLt: ";
        return "none: " + (message.rfind(title, 0) == 0 ? message.substr(title.size()) : message);
    }
}

}  // namespace mixgpt

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* handle) {
    static auto* const real = resolve<decltype(cublasLtCreate)>("cublasLtCreate");
    return real(handle);
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t handle) {
    static auto* const real = resolve<decltype(cublasLtDestroy)>("cublasLtDestroy");
    return real(handle);
}

const char* CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t status) {
    static auto* const real = resolve<decltype(cublasLtGetStatusString)>("cublasLtGetStatusString");
    return real(status);
}

size_t CUBLASWINAPI cublasLtGetVersion() {
    static auto* const real = resolve<decltype(cublasLtGetVersion)>("cublasLtGetVersion");
    return real();
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t operation,
                                           const void* alpha, const void* a, cublasLtMatrixLayout_t a_layout,
                                           const void* b, cublasLtMatrixLayout_t b_layout, const void* beta,
                                           const void* c, cublasLtMatrixLayout_t c_layout, void* d,
                                           cublasLtMatrixLayout_t d_layout,
                                           const cublasLtMatmulAlgo_t* algorithm, void* workspace,
                                           size_t workspace_bytes, cudaStream_t stream) {
    static auto* const real = resolve<decltype(cublasLtMatmul)>("cublasLtMatmul");
    return real(handle, operation, alpha, a, a_layout, b, b_layout, beta, c, c_layout, d, d_layout, algorithm,
                workspace, workspace_bytes, stream);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                                       uint64_t rows, uint64_t cols, int64_t ld) {
    static auto* const real = resolve<decltype(cublasLtMatrixLayoutCreate)>("cublasLtMatrixLayoutCreate");
    return real(layout, type, rows, cols, ld);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                             cublasLtMatrixLayoutAttribute_t attribute,
                                                             const void* buffer, size_t bytes) {
    static auto* const real =
        resolve<decltype(cublasLtMatrixLayoutSetAttribute)>("cublasLtMatrixLayoutSetAttribute");
    return real(layout, attribute, buffer, bytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    static auto* const real = resolve<decltype(cublasLtMatrixLayoutDestroy)>("cublasLtMatrixLayoutDestroy");
    return real(layout);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* operation,
                                                     cublasComputeType_t compute_type,
                                                     cudaDataType_t scale_type) {
    static auto* const real = resolve<decltype(cublasLtMatmulDescCreate)>("cublasLtMatmulDescCreate");
    return real(operation, compute_type, scale_type);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t operation) {
    static auto* const real = resolve<decltype(cublasLtMatmulDescDestroy)>("cublasLtMatmulDescDestroy");
    return real(operation);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t operation,
                                                           cublasLtMatmulDescAttributes_t attribute,
                                                           const void* value, size_t bytes) {
    static auto* const real =
        resolve<decltype(cublasLtMatmulDescSetAttribute)>("cublasLtMatmulDescSetAttribute");
    return real(operation, attribute, value, bytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* preference) {
    static auto* const real =
        resolve<decltype(cublasLtMatmulPreferenceCreate)>("cublasLtMatmulPreferenceCreate");
    return real(preference);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
    static auto* const real =
        resolve<decltype(cublasLtMatmulPreferenceDestroy)>("cublasLtMatmulPreferenceDestroy");
    return real(preference);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute, const void* value,
    size_t bytes) {
    static auto* const real =
        resolve<decltype(cublasLtMatmulPreferenceSetAttribute)>("cublasLtMatmulPreferenceSetAttribute");
    return real(preference, attribute, value, bytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t operation, cublasLtMatrixLayout_t a_layout,
    cublasLtMatrixLayout_t b_layout, cublasLtMatrixLayout_t c_layout, cublasLtMatrixLayout_t d_layout,
    cublasLtMatmulPreference_t preference, int requested, cublasLtMatmulHeuristicResult_t results[],
    int* found) {
    static auto* const real =
        resolve<decltype(cublasLtMatmulAlgoGetHeuristic)>("cublasLtMatmulAlgoGetHeuristic");
    return real(handle, operation, a_layout, b_layout, c_layout, d_layout, preference, requested, results,
                found);
}
