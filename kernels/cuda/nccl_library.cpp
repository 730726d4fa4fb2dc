// NCCL, loaded the first time mixgpt calls it (a multi-GPU run, or a bench timing the gradient
// exchange) instead of linked: every binary then starts on a host without NCCL, and only the work
// that needs it says it is missing. This file defines the functions of nccl.h that mixgpt calls;
// each finds the library's own on its first call. The library must be an NCCL 2 built for the CUDA
// major this binary was built with, found as core/cuda_library_search.h says. (The simulator
// defines the same functions itself, so this file is not part of its build.)
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "core/cuda_library_search.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/cuda_libraries.h"

namespace {

const mixgpt::LoadedCudaLibrary& library() {
    static const mixgpt::LoadedCudaLibrary loaded({"NCCL", "libnccl.so", NCCL_MAJOR, CUDART_VERSION,
                                                   mixgpt::CudaOfLibrary::nccl_text});
    return loaded;
}

template <typename Function>
Function* resolve(const char* name) {
    return reinterpret_cast<Function*>(library().symbol(name));
}

}  // namespace

namespace mixgpt {

std::string nccl_library_status() {
    try {
        const std::string path = library().path();
        const NcclFileVersion version = nccl_file_version(path);
        int code = 0;
        ncclGetVersion(&code);
        // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
        return format("%d.%d.%d", code / 10000, code / 100 % 100, code % 100) +
               (version.cuda.empty() ? "" : " for CUDA " + version.cuda) + " (" + path + ")";
    } catch (const Error& error) {
        const std::string message = error.what(), title = "NCCL: ";
        return "none: " + (message.rfind(title, 0) == 0 ? message.substr(title.size()) : message);
    }
}

}  // namespace mixgpt

ncclResult_t ncclGetVersion(int* version) {
    static auto* const real = resolve<decltype(ncclGetVersion)>("ncclGetVersion");
    return real(version);
}

const char* ncclGetErrorString(ncclResult_t result) {
    static auto* const real = resolve<decltype(ncclGetErrorString)>("ncclGetErrorString");
    return real(result);
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
    static auto* const real = resolve<decltype(ncclGetUniqueId)>("ncclGetUniqueId");
    return real(id);
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int ranks, ncclUniqueId id, int rank) {
    static auto* const real = resolve<decltype(ncclCommInitRank)>("ncclCommInitRank");
    return real(comm, ranks, id, rank);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    static auto* const real = resolve<decltype(ncclCommDestroy)>("ncclCommDestroy");
    return real(comm);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
    static auto* const real = resolve<decltype(ncclCommGetAsyncError)>("ncclCommGetAsyncError");
    return real(comm, async_error);
}

ncclResult_t ncclAllReduce(const void* send, void* receive, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    static auto* const real = resolve<decltype(ncclAllReduce)>("ncclAllReduce");
    return real(send, receive, count, type, op, comm, stream);
}

ncclResult_t ncclReduceScatter(const void* send, void* receive, size_t receive_count, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    static auto* const real = resolve<decltype(ncclReduceScatter)>("ncclReduceScatter");
    return real(send, receive, receive_count, type, op, comm, stream);
}

ncclResult_t ncclAllGather(const void* send, void* receive, size_t send_count, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream) {
    static auto* const real = resolve<decltype(ncclAllGather)>("ncclAllGather");
    return real(send, receive, send_count, type, comm, stream);
}
