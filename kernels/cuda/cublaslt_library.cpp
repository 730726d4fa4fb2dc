// cuBLASLt, loaded the first time mixgpt calls it instead of when the process starts. Linked
// directly, libcublasLt's initializers ran in every process, CPU runs and `mixgpt --help`
// included: 0.4 s and about 200 MiB of resident memory before main. This file defines the
// functions of cublasLt.h that mixgpt calls; each finds the library's own on its first call.
// (The simulator defines the same functions itself, so this file is not part of its build.)
#include <cublasLt.h>
#include <dlfcn.h>

#include <string>

#include "core/error.h"

namespace {

// "libcublasLt.so.13": the major version this binary was compiled against.
const std::string& library_name() {
    static const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    return name;
}

void* library() {
    static void* const handle = [] {
        void* opened = dlopen(library_name().c_str(), RTLD_NOW | RTLD_LOCAL);
        if (opened == nullptr)
            throw mixgpt::Error(
                "cuBLASLt: cannot load " + library_name() + " (" + dlerror() +
                "): put the CUDA toolkit's lib folder on the loader's path (LD_LIBRARY_PATH)");
        return opened;
    }();
    return handle;
}

template <typename Function>
Function* resolve(const char* name) {
    void* address = dlsym(library(), name);
    if (address == nullptr)
        throw mixgpt::Error("cuBLASLt: " + library_name() + " has no " + name + " (" + dlerror() + ")");
    return reinterpret_cast<Function*>(address);
}

}  // namespace

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
