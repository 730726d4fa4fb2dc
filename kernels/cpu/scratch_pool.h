// Float scratch for the CPU ops' temporaries (float images of bf16/fp16 tensors, TF32-rounded
// operands, attention scores), kept between ops and reused. A fresh std::vector per op zero-filled
// its memory and, above glibc's mmap threshold, took new pages from the kernel on every call: on an
// emulated bf16 step of d2 (B 8, T 128, V 8192) the memset and the page faults were about half of
// the time. Blocks are allocated through the backend's MemoryTracker, so peak_memory_bytes()
// includes them.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "core/memory.h"
#include "kernels/cpu/memory_tracker.h"

namespace mixgpt::cpu {

class ScratchPool;

// A block of at least `count` floats borrowed from a pool, returned when the lease ends. Its
// contents are whatever the last borrower left: write before reading.
class ScratchLease {
public:
    ScratchLease() = default;
    ScratchLease(ScratchPool* pool, Buffer block) : pool_(pool), block_(std::move(block)) {}
    ScratchLease(ScratchLease&& other) noexcept = default;
    ScratchLease& operator=(ScratchLease&& other) noexcept;
    ScratchLease(const ScratchLease&) = delete;
    ScratchLease& operator=(const ScratchLease&) = delete;
    ~ScratchLease();

    float* data() const { return block_.as<float>(); }

private:
    void give_back();

    ScratchPool* pool_ = nullptr;
    Buffer block_;
};

class ScratchPool {
public:
    explicit ScratchPool(MemoryTracker& memory) : memory_(memory) {}
    ScratchPool(const ScratchPool&) = delete;
    ScratchPool& operator=(const ScratchPool&) = delete;

    // The smallest free block that holds `count` floats without wasting more than half of
    // itself, else a new block. Safe to call from several threads.
    ScratchLease borrow(size_t count);

private:
    friend class ScratchLease;
    void give_back(Buffer block);

    MemoryTracker& memory_;
    std::mutex mutex_;
    std::vector<Buffer> free_blocks_;
};

}  // namespace mixgpt::cpu
