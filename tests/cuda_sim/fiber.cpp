#include "tests/cuda_sim/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>
#include <vector>

namespace mixgpt::cuda_sim {

#if defined(__x86_64__)
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
#else
// getcontext returns twice: kept out of its callers' loops.
__attribute__((noinline)) void make_context(Context& context, void* stack, size_t bytes, void (*entry)()) {
    getcontext(&context.ucontext);
    context.ucontext.uc_stack.ss_sp = stack;
    context.ucontext.uc_stack.ss_size = bytes;
    context.ucontext.uc_link = nullptr;
    makecontext(&context.ucontext, entry, 0);
}
#endif

void* fiber_stack(size_t index) {
    static std::vector<unsigned char*> stacks;  // used by one launch at a time (block_runner.cpp)
    while (stacks.size() <= index) {
        const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        void* base = mmap(nullptr, kFiberStackBytes + page, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (base == MAP_FAILED) throw std::bad_alloc();
        mprotect(base, page, PROT_NONE);
        stacks.push_back(static_cast<unsigned char*>(base) + page);
    }
    return stacks[index];
}

}  // namespace mixgpt::cuda_sim
