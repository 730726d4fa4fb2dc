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
#include <cstdint>
#include <functional>

namespace mixgpt::cuda_sim {

// What the process has asked of the simulated CUDA libraries so far; tests compare two readings
// (tests/sim/test_sim_step_resources.cpp).
struct RuntimeCounters {
    uint64_t device_allocations = 0;  // cudaMalloc
    uint64_t device_frees = 0;        // cudaFree
    uint64_t kernel_launches = 0;
    // Runs of device computations (kernels, cuBLASLt products, NCCL collectives, the CUB sort)
    // that the host did not interrupt by waiting for one. A wait (stream or event synchronize,
    // cudaMemcpy, a copy into pageable memory, cudaFree, cudaFreeHost) that had computations to
    // run ends a run; the next computation enqueued starts one. Streams run lazily, so a
    // training step whose host waited for the device only after its last computation is one
    // run, and one that synchronized in between is two. Waits for copies alone end none.
    uint64_t compute_runs = 0;
    uint64_t matmuls = 0;       // cublasLtMatmul
    uint64_t matmul_plans = 0;  // cublasLtMatmulDescCreate and cublasLtMatmulAlgoGetHeuristic
};
RuntimeCounters runtime_counters();

// cublaslt.cpp's share of the counters.
void count_matmul();
void count_matmul_plan();

// Whether [pointer, pointer + bytes) lies inside one live cudaMalloc allocation.
bool in_device_memory(const void* pointer, size_t bytes);

// Appends `work` to the stream (nullptr: the legacy default stream).
void enqueue(cudaStream_t stream, std::function<void()> work);
// The same for a device computation (RuntimeCounters::compute_runs): kernels, cuBLASLt
// products, NCCL collectives, the CUB sort.
void enqueue_compute(cudaStream_t stream, std::function<void()> work);

// A kernel launch: the configuration is checked now (its error is the launch's, as
// cudaGetLastError reports it); `body` runs each thread when the stream gets there, and a
// fault then is reported by the next synchronizing call.
cudaError_t enqueue_launch(cudaStream_t stream, const void* kernel, dim3 grid, dim3 block,
                           size_t dynamic_shared_bytes, std::function<void()> body);

}  // namespace mixgpt::cuda_sim
