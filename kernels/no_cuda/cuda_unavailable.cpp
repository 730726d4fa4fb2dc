// Compiled instead of kernels/cuda/*.cu when no CUDA toolkit was found at build time.
#include "core/error.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda_libraries.h"
#include "kernels/device_discovery.h"

namespace mixgpt {
namespace {

constexpr const char* kBuiltWithoutCuda =
    "this mixgpt was built without CUDA (no toolkit found at build time); install the CUDA toolkit, "
    "set CUDA_HOME if it is not in /usr/local/cuda, and rebuild";

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions&) { throw Error(kBuiltWithoutCuda); }

int cuda_device_count_impl() { return 0; }

CudaDiscovery discover_cuda(const CudaRuntimeQueries&) {
    CudaDiscovery found;
    found.failure = kBuiltWithoutCuda;
    return found;
}

std::string select_cuda_device(int) { return kBuiltWithoutCuda; }

std::string cublaslt_library_status() { return "not built"; }
std::string nccl_library_status() { return "not built"; }

}  // namespace mixgpt
