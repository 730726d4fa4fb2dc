#include "core/error.h"
#include "kernels/backend_factory.h"
#include "kernels/device_choice.h"
#include "kernels/ops.h"

namespace mixgpt {

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
    if (options.device == "cpu") return make_cpu_backend(options);
    if (options.device == "cuda") return make_cuda_backend(options);
    if (options.device == "auto") {
        BackendOptions decided = options;
        decided.device = resolve_device(options.device, options.device_index);
        return make_backend(decided);
    }
    throw Error("unknown device '" + options.device + "' (expected auto, cpu or cuda)");
}

int cuda_device_count() { return cuda_device_count_impl(); }

bool built_with_cuda() {
#ifdef MIXGPT_WITH_CUDA
    return true;
#else
    return false;
#endif
}

}  // namespace mixgpt
