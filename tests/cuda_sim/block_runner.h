// The CUDA execution model on the CPU: a launch runs its blocks one after another, and a
// block's threads as fibers on the calling thread. A fiber runs until it reaches a barrier
// (__syncthreads, a warp collective) or returns, so every schedule the barriers allow is a
// schedule some GPU could run, and the faults a GPU would show (or hide) are reported:
//   - a deadlock: a __syncthreads that not every live thread reaches, warp lanes at different
//     collectives, a collective whose lanes have exited;
//   - a launch the device would refuse (launch_checks.h);
//   - an ldmatrix or cp.async outside the block's dynamic shared memory, or misaligned.
// A fault ends the launch, prints what happened to stderr and becomes the launch's error.
// This is the scheduler; beside it: fiber.h (the threads' contexts and stacks), bank_conflicts.h
// (what a launch counts), async_copy.h (cp.async), launch_checks.h, simulated_block.h (the state
// of the block in flight that they share).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace mixgpt::cuda_sim {

// Where the simulated thread running now stands; threadIdx, blockIdx, blockDim and gridDim.
struct ThreadPosition {
    uint3 thread;
    uint3 block;
    dim3 block_dim;
    dim3 grid_dim;
};
const ThreadPosition& position();
int lane();  // threadIdx's linear index % 32

// The two adversarial schedules a launch runs in. Either way the blocks run one at a time, a
// block's warps one at a time, each as far as it can (through its own collectives) before the
// next starts, and a warp's lanes one at a time up to their next collective, so a read of shared
// memory that another thread has yet to fill sees the 0xff poison. They differ in order and in
// when cp.async copies land:
//   forward:  ascending blocks, warps and lanes; a copy lands at the wait that completes its
//             group, so a read that does not wait for it sees stale data;
//   backward: descending blocks, warps and lanes; a copy lands when issued, so overwriting a
//             buffer that another warp has yet to read shows.
// A block that reads what another block of the same launch writes sees it in one schedule and not
// in the other.
// Code free of races gives the same bits under both. MIXGPT_CUDA_SIM_SCHEDULE=backward in the
// environment selects the second for the process.
enum class Schedule { forward, backward };

// Runs `body` (one thread's work) for every thread of the grid, now. Returns cudaSuccess, a
// launch configuration error (nothing ran), or cudaErrorLaunchFailure after a fault.
cudaError_t launch(const void* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes,
                   const std::function<void()>& body);

// ---- for the device functions (device_functions.h, warp_matrix.h) ----

// The block's dynamic shared memory: `dynamic_shared_bytes` of the launch, poisoned with 0xff
// bytes (NaN in every float format) when the block starts.
unsigned char* dynamic_shared_memory();

void sync_threads();

// What one lane brings to a warp collective, and what it takes away.
struct alignas(16) LaneSlot {
    unsigned char bytes[64];
};
// Computes every participating lane's result from the deposits, once all have arrived.
using Resolve = void (*)(const LaneSlot (&deposits)[32], LaneSlot (&results)[32], unsigned lanes);

// Deposits `bytes` of `deposit` and waits until every lane of `mask` has arrived at the same
// `instruction` (a string literal); returns this lane's result. mask must hold the lane.
const LaneSlot& warp_collective(const char* instruction, unsigned mask, const void* deposit, size_t bytes,
                                Resolve resolve);

// Ends the launch with `message` (the running thread's position is added).
[[noreturn]] void fault(const std::string& message);

// Faults unless the running launch has at most `max_threads` threads per block and
// `max_dynamic_shared_bytes` of dynamic shared memory, what `kernel` declares
// (declare_launch_limits): a GPU refuses threads past __launch_bounds__ too.
void expect_launch_limits(const char* kernel, int max_threads, size_t max_dynamic_shared_bytes);

// Checks that [address, address + bytes) lies in the dynamic shared memory and is aligned to
// `alignment`; faults naming `instruction` otherwise.
void expect_shared(const char* instruction, const void* address, size_t bytes, size_t alignment);

}  // namespace mixgpt::cuda_sim
