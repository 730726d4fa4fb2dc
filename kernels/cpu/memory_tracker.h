// Host allocations of the CPU backend with a running count of bytes held, so
// that peak_memory_bytes() can report what a run really allocated. Each
// allocation records its size and its tracker in a 64-byte header in front of
// the memory handed out; the tracker lives until its backend and every buffer
// it allocated are gone.
#pragma once

#include <cstddef>

#include "core/memory.h"

namespace mixgpt::cpu {

class MemoryTracker {
public:
    MemoryTracker();
    ~MemoryTracker();
    MemoryTracker(const MemoryTracker&) = delete;
    MemoryTracker& operator=(const MemoryTracker&) = delete;

    // 64-byte aligned, zero-filled host memory counted by this tracker.
    Buffer allocate(size_t bytes);
    size_t peak_bytes() const;

private:
    struct State;
    State* state_;
};

}  // namespace mixgpt::cpu
