// Which kernels a piece of host code launches, with what configuration: while a LaunchRecorder
// lives, launch_kernel (common.cuh) notes each launch's kernel, threads per block and dynamic
// shared memory. The kernel lab asks the occupancy API about each (bench/kernel_lab/).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <vector>

namespace mixgpt::cuda {

struct KernelLaunch {
    const void* kernel;
    int threads;                  // per block
    size_t dynamic_shared_bytes;  // per block
};

// At most one at a time in a process (a second throws Error).
class LaunchRecorder {
public:
    LaunchRecorder();
    ~LaunchRecorder();
    LaunchRecorder(const LaunchRecorder&) = delete;
    LaunchRecorder& operator=(const LaunchRecorder&) = delete;

    // The distinct (kernel, threads, dynamic shared bytes) launched since it was made, in the
    // order of their first launch.
    std::vector<KernelLaunch> launches() const;

    void note(const KernelLaunch& launch);

private:
    mutable std::mutex mutex_;
    std::vector<KernelLaunch> launches_;
};

// Called by launch_kernel for every launch: tells the live recorder, if any.
void note_launch(const void* kernel, dim3 block, size_t dynamic_shared_bytes);

}  // namespace mixgpt::cuda
