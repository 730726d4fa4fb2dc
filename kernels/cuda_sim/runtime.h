// What the simulated CUDA runtime (runtime.cpp) offers the simulator's other parts: device
// memory queries, and streams whose work runs lazily.
//
// Work enqueued on a stream runs only when the host needs it: a synchronize of the stream, the
// device or an event recorded after it, a stream waiting for such an event whose own work must
// run, a copy into pageable host memory, cudaFree. It then runs in stream order. Nothing runs
// just because time passed, so work that a missing event wait leaves unordered runs late (reads
// stale data, or is overwritten first): the worst case a GPU may show.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

namespace mixgpt::cuda_sim {

// Whether [pointer, pointer + bytes) lies inside one live cudaMalloc allocation.
bool in_device_memory(const void* pointer, size_t bytes);

// Appends `work` to the stream (nullptr: the legacy default stream).
void enqueue(cudaStream_t stream, std::function<void()> work);

// A kernel launch: the configuration is checked now (its error is the launch's, as
// cudaGetLastError reports it); `body` runs each thread when the stream gets there, and a
// fault then is reported by the next synchronizing call.
cudaError_t enqueue_launch(cudaStream_t stream, const void* kernel, dim3 grid, dim3 block,
                           size_t dynamic_shared_bytes, std::function<void()> body);

}  // namespace mixgpt::cuda_sim
