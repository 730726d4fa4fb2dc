// Fibers for the simulated threads (block_runner.cpp): contexts to switch between, and their
// stacks. On x86-64 a switch saves the callee-saved registers and the FPU control words on the
// stack it leaves, in about 20 instructions and no system call; elsewhere it is ucontext's, which
// makes two.
#pragma once

#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace mixgpt::cuda_sim {

// Each fiber's stack: kernels' locals are small; AddressSanitizer's frames are not.
constexpr size_t kFiberStackBytes = size_t{256} << 10;

#if defined(__x86_64__)
struct Context {
    void* stack_pointer = nullptr;
};
extern "C" void mixgpt_sim_switch(void** save_stack_pointer, void* load_stack_pointer);  // fiber.cpp

// Saves the running context into `from` and continues `to` (inline: the scheduler switches at
// every barrier of every thread).
inline void switch_context(Context& from, const Context& to) {
    mixgpt_sim_switch(&from.stack_pointer, to.stack_pointer);
}
#else
struct Context {
    ucontext_t ucontext;
};

inline void switch_context(Context& from, const Context& to) { swapcontext(&from.ucontext, &to.ucontext); }
#endif

// A context that starts `entry` (which never returns) at the top of [stack, stack + bytes).
void make_context(Context& context, void* stack, size_t bytes, void (*entry)());

// The stack of fiber `index` (kFiberStackBytes, a guard page below it): mapped on first use and
// kept for every later launch of the process.
void* fiber_stack(size_t index);

}  // namespace mixgpt::cuda_sim
