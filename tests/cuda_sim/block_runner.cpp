#include "tests/cuda_sim/block_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "tests/cuda_sim/bank_conflicts.h"
#include "tests/cuda_sim/launch_checks.h"
#include "tests/cuda_sim/simulated_block.h"

#ifdef MIXGPT_SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace mixgpt::cuda_sim {

thread_local Block* t_block = nullptr;

Schedule schedule() {
    static const Schedule chosen = [] {
        const char* name = std::getenv("MIXGPT_CUDA_SIM_SCHEDULE");
        return name != nullptr && std::strcmp(name, "backward") == 0 ? Schedule::backward : Schedule::forward;
    }();
    return chosen;
}

std::mutex& launch_mutex() {
    static std::mutex mutex;  // one launch at a time: blocks share the kernels' static __shared__ arrays
    return mutex;
}

namespace {

// The k-th of `count` warps or lanes in the schedule's order.
int in_order(int k, int count) { return schedule() == Schedule::forward ? k : count - 1 - k; }

std::string describe(const ThreadPosition& p) {
    std::ostringstream text;
    text << "block (" << p.block.x << "," << p.block.y << "," << p.block.z << ") thread (" << p.thread.x
         << "," << p.thread.y << "," << p.thread.z << ")";
    return text.str();
}

// ---- switching between the scheduler and a thread ----

void switch_to_scheduler(Block& block, bool thread_finished) {
#ifdef MIXGPT_SIM_ASAN
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(thread_finished ? nullptr : &fake_stack, block.scheduler_stack_bottom,
                                   block.scheduler_stack_size);
    switch_context(block.running->context, block.scheduler);
    __sanitizer_finish_switch_fiber(fake_stack, &block.scheduler_stack_bottom, &block.scheduler_stack_size);
#else
    (void)thread_finished;
    switch_context(block.running->context, block.scheduler);
#endif
}

void resume(Block& block, SimThread& thread) {
    block.running = &thread;
#ifdef MIXGPT_SIM_ASAN
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, fiber_stack(static_cast<size_t>(thread.linear)),
                                   kFiberStackBytes);
    switch_context(block.scheduler, thread.context);
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#else
    switch_context(block.scheduler, thread.context);
#endif
    block.running = nullptr;
}

void thread_entry() {
    Block& block = *t_block;
#ifdef MIXGPT_SIM_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &block.scheduler_stack_bottom, &block.scheduler_stack_size);
#endif
    (*block.body)();
    SimThread& self = *block.running;
    land_copies(self, 0);  // copies still in flight land before the block ends
    self.state = State::exited;
    switch_to_scheduler(block, true);
}

// ---- resolving barriers once every thread has run as far as it can ----

enum class Release { none, released, fault };

// Releases warp w if its lanes have all arrived at one collective; faults on divergence.
Release release_warp(Block& block, int w) {
    const int thread_count = static_cast<int>(block.threads.size());
    const int first = w * kWarpSize;
    const int lanes = std::min(kWarpSize, thread_count - first);
    SimThread* waiting = nullptr;
    for (int l = 0; l < lanes && waiting == nullptr; ++l)
        if (block.threads[first + l].state == State::at_warp_collective) waiting = &block.threads[first + l];
    if (waiting == nullptr) return Release::none;
    const unsigned mask = waiting->mask;
    bool complete = true;
    for (int l = 0; l < lanes; ++l) {
        if (!(mask >> l & 1u)) continue;
        const SimThread& lane = block.threads[first + l];
        if (lane.state == State::at_warp_collective &&
            (lane.mask != mask || std::strcmp(lane.instruction, waiting->instruction) != 0)) {
            block.fault_message =
                "lanes of one warp wait at different collectives: " + describe(waiting->position) + " at " +
                waiting->instruction + ", " + describe(lane.position) + " at " + lane.instruction;
            return Release::fault;
        }
        if (lane.state == State::exited) {
            block.fault_message = std::string(waiting->instruction) + " needs lane " + std::to_string(l) +
                                  " of the warp of " + describe(waiting->position) + ", which has exited";
            return Release::fault;
        }
        if (lane.state != State::at_warp_collective) complete = false;
    }
    for (int l = lanes; l < kWarpSize; ++l)
        if (mask >> l & 1u) {
            block.fault_message = std::string(waiting->instruction) + " names lane " + std::to_string(l) +
                                  ", past the block's last thread";
            return Release::fault;
        }
    if (!complete) return Release::none;
    WarpExchange& exchange = block.warps[static_cast<size_t>(w)];
    exchange.resolve(exchange.deposits, exchange.results, mask);
    for (int l = 0; l < lanes; ++l)
        if (mask >> l & 1u) block.threads[first + l].state = State::runnable;
    return Release::released;
}

bool release_block_barrier(Block& block) {
    bool any_waiting = false;
    for (const SimThread& t : block.threads) {
        if (t.state == State::at_block_barrier) any_waiting = true;
        if (t.state == State::runnable || t.state == State::at_warp_collective) return false;
    }
    if (!any_waiting) return false;
    for (SimThread& t : block.threads)
        if (t.state == State::at_block_barrier) t.state = State::runnable;
    return true;
}

std::string describe_deadlock(const Block& block) {
    std::ostringstream text;
    text << "deadlock: no thread can go on;";
    int shown = 0;
    for (const SimThread& t : block.threads) {
        if (t.state == State::exited) continue;
        if (shown++ == 4) {
            text << " ...";
            break;
        }
        text << " " << describe(t.position) << " waits at "
             << (t.state == State::at_block_barrier ? "__syncthreads" : t.instruction) << ";";
    }
    return text.str();
}

// Sets the thread up to start thread_entry on its own stack.
void prepare_thread(SimThread& t) {
    t.state = State::runnable;
    t.open_group.clear();
    t.committed_groups.clear();
    t.shared_accesses.clear();
    void* stack = fiber_stack(static_cast<size_t>(t.linear));
#ifdef MIXGPT_SIM_ASAN
    // The frames of the fiber that ran here before never returned: their redzones are poisoned.
    __asan_unpoison_memory_region(stack, kFiberStackBytes);
#endif
    make_context(t.context, stack, kFiberStackBytes, thread_entry);
}

// Resumes warp w's runnable lanes in the thread order; returns whether any ran, false on a fault.
bool run_lanes(Block& block, int w, bool& ran) {
    const int first = w * kWarpSize;
    const int lanes = std::min(kWarpSize, static_cast<int>(block.threads.size()) - first);
    ran = false;
    for (int k = 0; k < lanes; ++k) {
        SimThread& t = block.threads[first + in_order(k, lanes)];
        if (t.state != State::runnable) continue;
        resume(block, t);
        ran = true;
        if (t.state == State::faulted) return false;
    }
    return true;
}

// The kernels' __shared__ variables: the section prelude.h puts them in, bounded by the symbols
// the linker defines for it (weak: null in a program without kernels).
extern "C" {
extern unsigned char __start_mixgpt_sim_shared[] __attribute__((weak));
extern unsigned char __stop_mixgpt_sim_shared[] __attribute__((weak));
}

void poison_static_shared_memory() {
    if (__start_mixgpt_sim_shared != nullptr)
        std::fill(__start_mixgpt_sim_shared, __stop_mixgpt_sim_shared, static_cast<unsigned char>(0xff));
}

// Runs one block to the end; returns false after a fault (block.fault_message says which).
// Each warp in turn runs as far as it can, through its own collectives, before the next one
// starts: a warp that reads shared memory another warp has yet to fill sees the poison.
bool run_block(Block& block) {
    for (SimThread& t : block.threads) prepare_thread(t);
    std::fill(block.shared.begin(), block.shared.end(), 0xff);
    poison_static_shared_memory();
    const int warps = static_cast<int>(block.warps.size());
    for (;;) {
        bool progress = false;
        for (int k = 0; k < warps; ++k) {
            const int w = in_order(k, warps);
            for (;;) {
                bool ran = false;
                if (!run_lanes(block, w, ran)) return false;
                count_warp_shared_accesses(block, w);
                const Release release = release_warp(block, w);
                if (release == Release::fault) return false;
                if (!ran && release == Release::none) break;
                progress = true;
            }
        }
        if (progress || release_block_barrier(block)) continue;
        bool all_exited = true;
        for (const SimThread& t : block.threads) all_exited = all_exited && t.state == State::exited;
        if (all_exited) return true;
        block.fault_message = describe_deadlock(block);
        return false;
    }
}

}  // namespace

const ThreadPosition& position() { return current_block().running->position; }

int lane() { return current_block().running->linear % kWarpSize; }

cudaError_t launch(const void* kernel, dim3 grid, dim3 block_dim, size_t dynamic_shared_bytes,
                   const std::function<void()>& body) {
    if (const cudaError_t status = check_configuration(kernel, grid, block_dim, dynamic_shared_bytes);
        status != cudaSuccess)
        return status;
    std::lock_guard<std::mutex> lock(launch_mutex());
    const int count = static_cast<int>(block_dim.x * block_dim.y * block_dim.z);
    Block block;
    block.body = &body;
    block.threads.resize(static_cast<size_t>(count));
    block.warps.resize(static_cast<size_t>((count + kWarpSize - 1) / kWarpSize));
    block.shared.resize(dynamic_shared_bytes);
    for (int i = 0; i < count; ++i) {
        SimThread& t = block.threads[i];
        t.linear = i;
        t.position.thread = {static_cast<unsigned>(i) % block_dim.x,
                             static_cast<unsigned>(i) / block_dim.x % block_dim.y,
                             static_cast<unsigned>(i) / (block_dim.x * block_dim.y)};
        t.position.block_dim = block_dim;
        t.position.grid_dim = grid;
    }
    t_block = &block;
    bool ok = true;
    const auto ordered = [](unsigned k, unsigned count) {
        return static_cast<unsigned>(in_order(static_cast<int>(k), static_cast<int>(count)));
    };
    for (unsigned z = 0; z < grid.z && ok; ++z)
        for (unsigned y = 0; y < grid.y && ok; ++y)
            for (unsigned x = 0; x < grid.x && ok; ++x) {
                const dim3 index{ordered(x, grid.x), ordered(y, grid.y), ordered(z, grid.z)};
                for (SimThread& t : block.threads) t.position.block = index;
                ok = run_block(block);
            }
    t_block = nullptr;
    if (ok) return cudaSuccess;
    std::fprintf(stderr, "cuda_sim: kernel fault: %s\n", block.fault_message.c_str());
    return cudaErrorLaunchFailure;
}

unsigned char* dynamic_shared_memory() { return current_block().shared.data(); }

void expect_launch_limits(const char* kernel, int max_threads, size_t max_dynamic_shared_bytes) {
    const Block& block = current_block();
    if (block.threads.size() > static_cast<size_t>(max_threads) ||
        block.shared.size() > max_dynamic_shared_bytes)
        fault(std::string(kernel) + " launched with " + std::to_string(block.threads.size()) +
              " threads per block and " + std::to_string(block.shared.size()) +
              " bytes of dynamic shared memory; it declares at most " + std::to_string(max_threads) +
              " and " + std::to_string(max_dynamic_shared_bytes) + " (declare_launch_limits)");
}

void sync_threads() {
    Block& block = current_block();
    block.running->state = State::at_block_barrier;
    switch_to_scheduler(block, false);
}

const LaneSlot& warp_collective(const char* instruction, unsigned mask, const void* deposit, size_t bytes,
                                Resolve resolve) {
    Block& block = current_block();
    SimThread& self = *block.running;
    const int lane = self.linear % kWarpSize;
    if (!(mask >> lane & 1u))
        fault(std::string(instruction) + " with a mask that leaves out the calling lane");
    if (bytes > sizeof(LaneSlot)) fault(std::string(instruction) + ": deposit too large for the simulator");
    WarpExchange& exchange = block.warps[static_cast<size_t>(self.linear / kWarpSize)];
    if (bytes > 0) std::memcpy(exchange.deposits[lane].bytes, deposit, bytes);
    exchange.resolve = resolve;
    self.instruction = instruction;
    self.mask = mask;
    self.state = State::at_warp_collective;
    switch_to_scheduler(block, false);
    return exchange.results[lane];
}

void fault(const std::string& message) {
    Block& block = current_block();
    block.fault_message = describe(block.running->position) + ": " + message;
    block.running->state = State::faulted;
    switch_to_scheduler(block, false);
    std::abort();  // a faulted thread is never resumed
}

void expect_shared(const char* instruction, const void* address, size_t bytes, size_t alignment) {
    Block& block = current_block();
    const auto* begin = static_cast<const unsigned char*>(address);
    const unsigned char* base = block.shared.data();
    if (begin < base || begin + bytes > base + block.shared.size()) {
        std::ostringstream text;
        text << instruction << ": " << bytes << " bytes at " << address
             << " are not inside the block's dynamic shared memory (" << block.shared.size() << " bytes)";
        fault(text.str());
    }
    if (reinterpret_cast<uintptr_t>(address) % alignment != 0)
        fault(std::string(instruction) + ": shared address not " + std::to_string(alignment) +
              "-byte aligned");
}

}  // namespace mixgpt::cuda_sim
