// Move-only owners of host, pinned-host and device memory.
//
// core/ knows nothing of CUDA: a Buffer owns a pointer together with the
// function that frees it. Host memory is allocated here; pinned and device
// memory come from the CUDA backend (kernels/cuda), which hands back Buffers.
#pragma once

#include <cstddef>
#include <utility>

namespace mixgpt {

enum class MemoryKind { host, pinned_host, device };

class Buffer {
public:
    using Deleter = void (*)(void*);

    Buffer() = default;
    Buffer(void* data, size_t bytes, MemoryKind kind, Deleter deleter)
        : data_(data), bytes_(bytes), kind_(kind), deleter_(deleter) {}
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    Buffer(Buffer&& other) noexcept { swap(other); }
    Buffer& operator=(Buffer&& other) noexcept {
        Buffer(std::move(other)).swap(*this);
        return *this;
    }
    ~Buffer() {
        if (data_ != nullptr && deleter_ != nullptr) deleter_(data_);
    }

    // 64-byte aligned host memory, zero-filled; throws Error when the allocation fails.
    static Buffer host(size_t bytes);

    void* data() const { return data_; }
    template <typename T>
    T* as() const {
        return static_cast<T*>(data_);
    }
    size_t bytes() const { return bytes_; }
    MemoryKind kind() const { return kind_; }
    bool empty() const { return data_ == nullptr; }

private:
    void swap(Buffer& other) noexcept {
        std::swap(data_, other.data_);
        std::swap(bytes_, other.bytes_);
        std::swap(kind_, other.kind_);
        std::swap(deleter_, other.deleter_);
    }

    void* data_ = nullptr;
    size_t bytes_ = 0;
    MemoryKind kind_ = MemoryKind::host;
    Deleter deleter_ = nullptr;
};

}  // namespace mixgpt
