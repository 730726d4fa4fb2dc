#include "core/memory.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"

namespace mixgpt {

Buffer Buffer::host(size_t bytes) {
    constexpr size_t kAlignment = 64;
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* data = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
    if (data == nullptr) throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes");
    std::memset(data, 0, rounded);
    return Buffer(data, bytes, MemoryKind::host, &std::free);
}

}  // namespace mixgpt
