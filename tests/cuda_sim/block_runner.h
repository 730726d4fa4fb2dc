// The CUDA execution model on the CPU: a launch runs its blocks one after another, and a
// block's threads as fibers on the calling thread. A fiber runs until it reaches a barrier
// (__syncthreads, a warp collective) or returns, so every schedule the barriers allow is a
// schedule some GPU could run, and the faults a GPU would show (or hide) are reported:
//   - a deadlock: a __syncthreads that not every live thread reaches, warp lanes at different
//     collectives, a collective whose lanes have exited;
//   - a launch the device would refuse: grid or block out of range, too much shared memory;
//   - an ldmatrix or cp.async outside the block's dynamic shared memory, or misaligned.
// A fault ends the launch, prints what happened to stderr and becomes the launch's error.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
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

// cudaSuccess, or the error a GPU gives a launch of this configuration (printed to stderr).
cudaError_t check_configuration(const void* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes);

// Runs `body` (one thread's work) for every thread of the grid, now. Returns cudaSuccess, a
// launch configuration error (nothing ran), or cudaErrorLaunchFailure after a fault.
cudaError_t launch(const void* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes,
                   const std::function<void()>& body);

// The error of the last failed launch or runtime call, which cudaGetLastError returns and
// resets; record_error sets it (cudaSuccess leaves it).
cudaError_t take_last_error();
void record_error(cudaError_t status);

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), up to the
// device's opt-in limit.
cudaError_t set_max_dynamic_shared_bytes(const void* kernel, int bytes);

// The dynamic shared memory the kernel may use: cudaFuncSetAttribute's, or 48 KiB.
int max_dynamic_shared_bytes(const void* kernel);

// Shared memory a block may use without opt-in (with it: device_limits.h).
constexpr size_t kSharedBytesDefault = 48 * 1024;

// Shared-memory accesses of one owner (shared_pointer.h), counted the way the hardware serves
// them: each warp-wide load or store instruction is one request, split into phases (every lane
// for accesses of up to 4 bytes, half-warps for 8, quarter-warps for 16); a phase takes one
// wavefront per distinct 4-byte word on its busiest bank (32 banks, 4 bytes wide; lanes reading
// one word share it), so a phase whose lanes touch n words of one bank costs n - 1 extra.
struct SharedAccessCounts {
    uint64_t requests = 0;          // warp-wide instructions
    uint64_t phases = 0;            // phases with at least one active lane
    uint64_t extra_wavefronts = 0;  // wavefronts beyond one per phase
    int worst_phase = 0;            // the most wavefronts one phase took (1: no conflict)
};

// What the simulator counted since the last reset: shared-memory traffic whose lanes' addresses
// it sees at once. An ldmatrix.x4 reads 4 matrices, each in one phase of 8 16-byte rows; a phase
// whose rows share a bank (4 bytes wide, 32 of them) takes one more wavefront per repeat. Loads
// and stores through SharedPointer and cp.async's stores are counted per owner: the function
// that took the pointer, or "cp.async".
struct Counters {
    uint64_t ldmatrix_phases = 0;
    uint64_t ldmatrix_extra_wavefronts = 0;
    std::map<std::string, SharedAccessCounts> shared_accesses;  // by owner
};
Counters counters();
void reset_counters();

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

// Checks that [address, address + bytes) lies in the dynamic shared memory and is aligned to
// `alignment`; faults naming `instruction` otherwise.
void expect_shared(const char* instruction, const void* address, size_t bytes, size_t alignment);

// Counts one ldmatrix phase that needed `extra_wavefronts` beyond the first.
void count_ldmatrix_phase(int extra_wavefronts);

// Records the running lane's access of `bytes` of shared memory at `address`, made by the kernel
// instruction this function returns to. The lanes of a warp that run the same instruction for the
// same time since the warp last stopped are one request; they are counted under `owner` when the
// warp stops (a collective, a barrier, exit).
__attribute__((noinline)) void record_shared_access(const char* owner, const void* address, size_t bytes);

// cp.async for the running thread: a copy of `bytes` from `global` (zeros when !valid) that lands
// in shared memory when the schedule says (see Schedule).
void copy_async(void* shared, const void* global, size_t bytes, bool valid);
void copy_async_commit();
void copy_async_wait(int pending_groups);

}  // namespace mixgpt::cuda_sim
