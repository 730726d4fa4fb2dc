// The simulator's internal state of the block in flight, shared by the files that each handle one
// part of running it: block_runner.cpp (the scheduler), async_copy.cpp (cp.async groups) and
// bank_conflicts.cpp (shared-memory accesses). Not for kernels or tests: they see block_runner.h,
// async_copy.h and bank_conflicts.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/cuda_sim/block_runner.h"
#include "tests/cuda_sim/fiber.h"

#if defined(__SANITIZE_ADDRESS__)
#define MIXGPT_SIM_ASAN 1
#endif

namespace mixgpt::cuda_sim {

constexpr int kWarpSize = 32;

// A cp.async copy issued and not yet landed (async_copy.cpp).
struct PendingCopy {
    void* shared;
    unsigned char data[16];
    size_t bytes;
};

// One lane's shared-memory access, and the kernel instruction that made it (bank_conflicts.cpp).
struct SharedAccess {
    const void* instruction;
    const char* owner;
    uintptr_t address;
    size_t bytes;
};

enum class State { runnable, at_block_barrier, at_warp_collective, exited, faulted };

struct SimThread {
    Context context;
    ThreadPosition position;
    int linear = 0;
    State state = State::runnable;
    const char* instruction = nullptr;  // the warp collective waited at
    unsigned mask = 0;
    std::vector<PendingCopy> open_group;
    std::deque<std::vector<PendingCopy>> committed_groups;
    std::vector<SharedAccess> shared_accesses;  // since its warp last stopped
};

struct WarpExchange {
    LaneSlot deposits[kWarpSize];
    LaneSlot results[kWarpSize];
    Resolve resolve = nullptr;
};

// One block in flight: its threads, their warps' exchanges and the scheduler's context.
struct Block {
    std::vector<SimThread> threads;
    std::vector<WarpExchange> warps;
    std::vector<unsigned char> shared;  // dynamic shared memory
    std::function<void()> const* body = nullptr;
    Context scheduler;
    SimThread* running = nullptr;
    std::string fault_message;
#ifdef MIXGPT_SIM_ASAN
    const void* scheduler_stack_bottom = nullptr;
    size_t scheduler_stack_size = 0;
#endif
};

// The block the calling host thread is running (block_runner.cpp), null outside a launch.
extern thread_local Block* t_block;

// The block whose thread is running; throws outside a kernel.
inline Block& current_block() {
    if (t_block == nullptr || t_block->running == nullptr)
        throw std::logic_error("cuda_sim: a device function was called outside a kernel");
    return *t_block;
}

// The process's schedule (MIXGPT_CUDA_SIM_SCHEDULE, read once).
Schedule schedule();

// Held by a launch while it runs, and by whoever reads or resets what launches count.
std::mutex& launch_mutex();

// async_copy.cpp: lands the thread's committed cp.async groups but the newest `pending`.
void land_copies(SimThread& thread, size_t pending);

// bank_conflicts.cpp: records the running lane's access of shared memory, made by `instruction`;
// counts the accesses warp w's lanes made since it last stopped.
void record_access(const void* instruction, const char* owner, const void* address, size_t bytes);
void count_warp_shared_accesses(Block& block, int w);

}  // namespace mixgpt::cuda_sim
