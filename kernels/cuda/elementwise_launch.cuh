// The launch of an element-wise kernel over n elements (GELU, ReLU²): `packed` takes `width`
// elements a thread with 16-byte accesses, used when n and every pointer allow them; `single`
// takes one element a thread otherwise. Both take the same arguments.
#pragma once

#include <initializer_list>
#include <utility>

#include "kernels/cuda/common.cuh"

namespace mixgpt::cuda {

template <typename... Parameters, typename... Arguments>
void launch_elementwise(void (*packed)(Parameters...), void (*single)(Parameters...), int width, int64_t n,
                        std::initializer_list<const void*> pointers, int threads, cudaStream_t stream,
                        Arguments&&... arguments) {
    if (n % width == 0 && all_aligned_16(pointers))
        launch_kernel(packed, blocks_for(n / width, threads), threads, 0, stream,
                      std::forward<Arguments>(arguments)...);
    else
        launch_kernel(single, blocks_for(n, threads), threads, 0, stream,
                      std::forward<Arguments>(arguments)...);
}

}  // namespace mixgpt::cuda
