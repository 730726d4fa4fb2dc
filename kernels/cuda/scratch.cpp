#include "kernels/cuda/scratch.h"

#include "core/cuda_check.h"

namespace mixgpt::cuda {

void* ScratchSpace::get(ScratchSlot slot, size_t bytes) {
    Buffer& region = regions_[static_cast<size_t>(slot)];
    if (region.empty() || region.bytes() < bytes) {
        if (!region.empty()) CUDA_CHECK(cudaStreamSynchronize(stream_));
        region = Buffer();
        region = allocator_.allocate(bytes);
    }
    return region.data();
}

}  // namespace mixgpt::cuda
