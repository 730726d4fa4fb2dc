#include "tests/cuda_sim/block_runner.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <tuple>
#include <vector>

#include "tests/cuda_sim/device_limits.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define MIXGPT_SIM_ASAN 1
#endif

namespace mixgpt::cuda_sim {
namespace {

constexpr int kWarpSize = 32;
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr size_t kStackBytes = size_t{256} << 10;  // kernels' locals are small; ASan's frames are not

// ---- fiber contexts: on x86-64 a switch saves the callee-saved registers and the FPU control
// words on the stack it leaves (no system call); elsewhere ucontext, which makes two. ----
#if defined(__x86_64__)
extern "C" void mixgpt_sim_switch(void** save_stack_pointer, void* load_stack_pointer);
asm(R"(
    .text
    .globl mixgpt_sim_switch
    .type mixgpt_sim_switch, @function
mixgpt_sim_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $16, %rsp
    stmxcsr 8(%rsp)
    fnstcw (%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    fldcw (%rsp)
    ldmxcsr 8(%rsp)
    addq $16, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size mixgpt_sim_switch, .-mixgpt_sim_switch
    .section .note.GNU-stack, "", @progbits
    .text
)");

struct Context {
    void* stack_pointer = nullptr;
};

// A context that starts `entry` (which never returns) at the top of [stack, stack + bytes).
void make_context(Context& context, void* stack, size_t bytes, void (*entry)()) {
    auto* top = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t{15});
    uint64_t* sp = top - 10;  // what mixgpt_sim_switch pops: control words, 6 registers, return address
    uint32_t mxcsr;
    uint16_t fpu_control;
    asm volatile("stmxcsr %0" : "=m"(mxcsr));
    asm volatile("fnstcw %0" : "=m"(fpu_control));
    sp[0] = fpu_control;
    sp[1] = mxcsr;
    for (int i = 2; i < 8; ++i) sp[i] = 0;
    sp[8] = reinterpret_cast<uint64_t>(entry);  // `ret` lands here with rsp = top - 8, as after a call
    sp[9] = 0;
    context.stack_pointer = sp;
}

void switch_context(Context& from, const Context& to) {
    mixgpt_sim_switch(&from.stack_pointer, to.stack_pointer);
}
#else
struct Context {
    ucontext_t ucontext;
};

// getcontext returns twice: kept out of its callers' loops.
__attribute__((noinline)) void make_context(Context& context, void* stack, size_t bytes, void (*entry)()) {
    getcontext(&context.ucontext);
    context.ucontext.uc_stack.ss_sp = stack;
    context.ucontext.uc_stack.ss_size = bytes;
    context.ucontext.uc_link = nullptr;
    makecontext(&context.ucontext, entry, 0);
}

void switch_context(Context& from, const Context& to) { swapcontext(&from.ucontext, &to.ucontext); }
#endif

// ---- fiber stacks: mapped once, a guard page below each, reused by every launch ----
class StackPool {
public:
    void* stack(size_t index) {
        while (stacks_.size() <= index) {
            const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
            void* base = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
            if (base == MAP_FAILED) throw std::bad_alloc();
            mprotect(base, page, PROT_NONE);
            stacks_.push_back(static_cast<unsigned char*>(base) + page);
        }
        return stacks_[index];
    }

private:
    std::vector<unsigned char*> stacks_;
};

struct PendingCopy {
    void* shared;
    unsigned char data[16];
    size_t bytes;
};

// One lane's shared-memory access, and the kernel instruction that made it.
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

thread_local Block* t_block = nullptr;
thread_local cudaError_t t_last_error = cudaSuccess;
Schedule initial_schedule() {
    const char* name = std::getenv("MIXGPT_CUDA_SIM_SCHEDULE");
    return name != nullptr && std::strcmp(name, "backward") == 0 ? Schedule::backward : Schedule::forward;
}
const Schedule g_schedule = initial_schedule();

// The k-th of `count` warps or lanes in the schedule's order.
int in_order(int k, int count) { return g_schedule == Schedule::forward ? k : count - 1 - k; }
Counters g_counters;                                        // guarded by g_launch_mutex while a launch runs
std::map<const char*, SharedAccessCounts> g_shared_counts;  // by owner, as g_counters
std::mutex g_launch_mutex;  // one launch at a time: blocks share the kernels' static __shared__ arrays

StackPool& stack_pool() {
    static StackPool pool;
    return pool;
}

std::map<const void*, int>& max_dynamic_shared() {
    static std::map<const void*, int> limits;
    return limits;
}

Block& current_block() {
    if (t_block == nullptr || t_block->running == nullptr)
        throw std::logic_error("cuda_sim: a device function was called outside a kernel");
    return *t_block;
}

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
    __sanitizer_start_switch_fiber(&fake_stack, stack_pool().stack(static_cast<size_t>(thread.linear)),
                                   kStackBytes);
    switch_context(block.scheduler, thread.context);
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#else
    switch_context(block.scheduler, thread.context);
#endif
    block.running = nullptr;
}

// Lands the thread's committed cp.async groups but the newest `pending`.
void land_copies(SimThread& thread, size_t pending) {
    while (thread.committed_groups.size() > pending) {
        for (const PendingCopy& copy : thread.committed_groups.front())
            std::memcpy(copy.shared, copy.data, copy.bytes);
        thread.committed_groups.pop_front();
    }
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
    void* stack = stack_pool().stack(static_cast<size_t>(t.linear));
#ifdef MIXGPT_SIM_ASAN
    // The frames of the fiber that ran here before never returned: their redzones are poisoned.
    __asan_unpoison_memory_region(stack, kStackBytes);
#endif
    make_context(t.context, stack, kStackBytes, thread_entry);
}

// ---- shared-memory bank conflicts of the accesses SharedPointer records ----

constexpr int kBanks = 32;
constexpr size_t kBankBytes = 4;

// Wavefronts one phase takes: the most distinct words any bank holds among the lanes' accesses.
int phase_wavefronts(const SharedAccess* const* lanes, int count) {
    uintptr_t words[kWarpSize * 4];
    int n = 0;
    int on_bank[kBanks] = {};
    int worst = 0;
    for (int l = 0; l < count; ++l) {
        if (lanes[l] == nullptr) continue;
        const uintptr_t last = (lanes[l]->address + lanes[l]->bytes - 1) / kBankBytes;
        for (uintptr_t word = lanes[l]->address / kBankBytes; word <= last; ++word) {
            if (std::find(words, words + n, word) != words + n) continue;  // a word read once serves all
            words[n++] = word;
            worst = std::max(worst, ++on_bank[word % kBanks]);
        }
    }
    return worst;
}

// Counts one warp-wide instruction: lanes[l] is lane l's access, null for an inactive lane.
void count_shared_request(const SharedAccess* const (&lanes)[kWarpSize]) {
    const SharedAccess* first = nullptr;
    for (const SharedAccess* access : lanes)
        if (first == nullptr) first = access;
    const int phase_lanes = first->bytes <= 4 ? 32 : first->bytes <= 8 ? 16 : 8;
    SharedAccessCounts& counts = g_shared_counts[first->owner];
    ++counts.requests;
    for (int phase = 0; phase < kWarpSize; phase += phase_lanes) {
        const int wavefronts = phase_wavefronts(lanes + phase, phase_lanes);
        if (wavefronts == 0) continue;  // no active lane
        ++counts.phases;
        counts.extra_wavefronts += static_cast<uint64_t>(wavefronts - 1);
        counts.worst_phase = std::max(counts.worst_phase, wavefronts);
    }
}

// Whether every lane that accessed shared memory ran the same instructions in the same order (the
// common case, counted without sorting).
bool same_instructions(const Block& block, int first, int lanes, const std::vector<SharedAccess>*& sequence) {
    sequence = nullptr;
    for (int l = 0; l < lanes; ++l) {
        const std::vector<SharedAccess>& accesses = block.threads[first + l].shared_accesses;
        if (accesses.empty()) continue;
        if (sequence == nullptr) {
            sequence = &accesses;
        } else if (accesses.size() != sequence->size() ||
                   !std::equal(accesses.begin(), accesses.end(), sequence->begin(),
                               [](const SharedAccess& a, const SharedAccess& b) {
                                   return a.instruction == b.instruction;
                               })) {
            return false;
        }
    }
    return true;
}

// Counts the shared-memory accesses warp w's lanes made since it last stopped: the k-th time
// each lane ran one instruction is one request (lanes that ran it fewer times are inactive).
void count_warp_shared_accesses(Block& block, int w) {
    const int first = w * kWarpSize;
    const int lanes = std::min(kWarpSize, static_cast<int>(block.threads.size()) - first);
    const std::vector<SharedAccess>* sequence = nullptr;
    if (same_instructions(block, first, lanes, sequence)) {
        for (size_t k = 0; sequence != nullptr && k < sequence->size(); ++k) {
            const SharedAccess* request[kWarpSize] = {};
            for (int l = 0; l < lanes; ++l) {
                const std::vector<SharedAccess>& accesses = block.threads[first + l].shared_accesses;
                if (!accesses.empty()) request[l] = &accesses[k];
            }
            count_shared_request(request);
        }
    } else {
        std::vector<std::tuple<const void*, int, int, const SharedAccess*>> ordered;  // instruction, k, lane
        for (int l = 0; l < lanes; ++l) {
            std::map<const void*, int> times;
            for (const SharedAccess& access : block.threads[first + l].shared_accesses)
                ordered.emplace_back(access.instruction, times[access.instruction]++, l, &access);
        }
        std::sort(ordered.begin(), ordered.end());
        for (size_t begin = 0; begin < ordered.size();) {
            const SharedAccess* request[kWarpSize] = {};
            size_t end = begin;
            for (; end < ordered.size() && std::get<0>(ordered[end]) == std::get<0>(ordered[begin]) &&
                   std::get<1>(ordered[end]) == std::get<1>(ordered[begin]);
                 ++end)
                request[std::get<2>(ordered[end])] = std::get<3>(ordered[end]);
            count_shared_request(request);
            begin = end;
        }
    }
    for (int l = 0; l < lanes; ++l) block.threads[first + l].shared_accesses.clear();
}

void record_access(const void* instruction, const char* owner, const void* address, size_t bytes) {
    current_block().running->shared_accesses.push_back(
        {instruction, owner, reinterpret_cast<uintptr_t>(address), bytes});
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

cudaError_t check_configuration_locked(const void* kernel, dim3 grid, dim3 block, size_t shared_bytes) {
    const uint64_t threads = uint64_t{block.x} * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
        grid.z > 65535 || threads == 0 || threads > kMaxThreadsPerBlock || block.z > 64) {
        std::fprintf(stderr, "cuda_sim: invalid launch configuration: grid (%u,%u,%u), block (%u,%u,%u)\n",
                     grid.x, grid.y, grid.z, block.x, block.y, block.z);
        return cudaErrorInvalidConfiguration;
    }
    if (shared_bytes > kSharedBytesDefault) {
        const auto found = max_dynamic_shared().find(kernel);
        const size_t allowed = found == max_dynamic_shared().end() ? kSharedBytesDefault : found->second;
        if (shared_bytes > allowed) {
            std::fprintf(
                stderr,
                "cuda_sim: launch asks for %zu bytes of dynamic shared memory; the kernel may use %zu "
                "(cudaFuncSetAttribute raises the limit up to %zu)\n",
                shared_bytes, allowed, device_limits().shared_per_block_optin);
            return cudaErrorInvalidValue;
        }
    }
    return cudaSuccess;
}

}  // namespace

const ThreadPosition& position() { return current_block().running->position; }

int lane() { return current_block().running->linear % kWarpSize; }

cudaError_t take_last_error() {
    const cudaError_t status = t_last_error;
    t_last_error = cudaSuccess;
    return status;
}

void record_error(cudaError_t status) {
    if (status != cudaSuccess) t_last_error = status;
}

cudaError_t set_max_dynamic_shared_bytes(const void* kernel, int bytes) {
    if (bytes < 0 || static_cast<size_t>(bytes) > device_limits().shared_per_block_optin)
        return cudaErrorInvalidValue;
    std::lock_guard<std::mutex> lock(g_launch_mutex);
    max_dynamic_shared()[kernel] = bytes;
    return cudaSuccess;
}

int max_dynamic_shared_bytes(const void* kernel) {
    std::lock_guard<std::mutex> lock(g_launch_mutex);
    const auto found = max_dynamic_shared().find(kernel);
    return found == max_dynamic_shared().end() ? static_cast<int>(kSharedBytesDefault) : found->second;
}

cudaError_t check_configuration(const void* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes) {
    std::lock_guard<std::mutex> lock(g_launch_mutex);
    return check_configuration_locked(kernel, grid, block, dynamic_shared_bytes);
}

cudaError_t launch(const void* kernel, dim3 grid, dim3 block_dim, size_t dynamic_shared_bytes,
                   const std::function<void()>& body) {
    std::lock_guard<std::mutex> lock(g_launch_mutex);
    if (const cudaError_t status = check_configuration_locked(kernel, grid, block_dim, dynamic_shared_bytes);
        status != cudaSuccess)
        return status;
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

Counters counters() {
    std::lock_guard<std::mutex> lock(g_launch_mutex);
    Counters counters = g_counters;
    for (const auto& [owner, counts] : g_shared_counts) {  // one owner's name may sit at several addresses
        SharedAccessCounts& total = counters.shared_accesses[owner];
        total.requests += counts.requests;
        total.phases += counts.phases;
        total.extra_wavefronts += counts.extra_wavefronts;
        total.worst_phase = std::max(total.worst_phase, counts.worst_phase);
    }
    return counters;
}

void reset_counters() {
    std::lock_guard<std::mutex> lock(g_launch_mutex);
    g_counters = Counters{};
    g_shared_counts.clear();
}

void count_ldmatrix_phase(int extra_wavefronts) {
    ++g_counters.ldmatrix_phases;
    g_counters.ldmatrix_extra_wavefronts += static_cast<uint64_t>(extra_wavefronts);
}

void record_shared_access(const char* owner, const void* address, size_t bytes) {
    record_access(__builtin_return_address(0), owner, address, bytes);
}

unsigned char* dynamic_shared_memory() { return current_block().shared.data(); }

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

void copy_async(void* shared, const void* global, size_t bytes, bool valid) {
    expect_shared("cp.async", shared, bytes, bytes);
    if (valid && reinterpret_cast<uintptr_t>(global) % bytes != 0)
        fault("cp.async: global address not " + std::to_string(bytes) + "-byte aligned");
    record_access(__builtin_return_address(0), "cp.async", shared, bytes);
    PendingCopy copy{shared, {}, bytes};
    if (valid) std::memcpy(copy.data, global, bytes);
    if (g_schedule == Schedule::backward)
        std::memcpy(shared, copy.data, bytes);
    else
        current_block().running->open_group.push_back(copy);
}

void copy_async_commit() {
    SimThread& self = *current_block().running;
    self.committed_groups.push_back(std::move(self.open_group));
    self.open_group.clear();
}

void copy_async_wait(int pending_groups) {
    land_copies(*current_block().running, static_cast<size_t>(pending_groups));
}

}  // namespace mixgpt::cuda_sim
