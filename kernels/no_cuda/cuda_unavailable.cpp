// Compiled instead of kernels/cuda/*.cu when no CUDA toolkit was found at build time.
#include "core/error.h"
#include "kernels/backend_factory.h"

namespace mixgpt {

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions&) {
    throw Error(
        "this mixgpt was built without CUDA (no toolkit found at build time); install the "
        "CUDA toolkit, set CUDA_HOME if it is not in /usr/local/cuda, and rebuild");
}

int cuda_device_count_impl() { return 0; }

}  // namespace mixgpt
