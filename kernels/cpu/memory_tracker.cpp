#include "kernels/cpu/memory_tracker.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"

namespace mixgpt::cpu {
namespace {

constexpr size_t kHeaderBytes = 64;  // keeps the memory handed out 64-byte aligned

}  // namespace

struct MemoryTracker::State {
    std::atomic<size_t> current{0};
    std::atomic<size_t> peak{0};
    std::atomic<int> references{1};  // the tracker itself plus one per live buffer

    void release_reference() {
        if (references.fetch_sub(1) == 1) delete this;
    }
};

MemoryTracker::MemoryTracker() : state_(new State) {}

MemoryTracker::~MemoryTracker() { state_->release_reference(); }

Buffer MemoryTracker::allocate(size_t bytes) {
    struct Header {
        State* state;
        size_t bytes;
    };
    const size_t rounded = (bytes + kHeaderBytes - 1) / kHeaderBytes * kHeaderBytes;
    auto* base = static_cast<char*>(std::aligned_alloc(kHeaderBytes, kHeaderBytes + rounded));
    if (base == nullptr)
        throw Error("cpu backend: out of host memory allocating " + std::to_string(bytes) + " bytes");
    std::memset(base + kHeaderBytes, 0, rounded);
    const Header header{state_, bytes};
    std::memcpy(base, &header, sizeof header);
    state_->references.fetch_add(1);
    const size_t now = state_->current.fetch_add(bytes) + bytes;
    size_t peak = state_->peak.load();
    while (now > peak && !state_->peak.compare_exchange_weak(peak, now)) {
    }
    auto release = [](void* data) {
        char* block = static_cast<char*>(data) - kHeaderBytes;
        Header stored;
        std::memcpy(&stored, block, sizeof stored);
        stored.state->current.fetch_sub(stored.bytes);
        stored.state->release_reference();
        std::free(block);
    };
    return Buffer(base + kHeaderBytes, bytes, MemoryKind::host, release);
}

size_t MemoryTracker::peak_bytes() const { return state_->peak.load(); }

}  // namespace mixgpt::cpu
