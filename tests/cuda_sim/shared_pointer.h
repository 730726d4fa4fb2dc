// SharedPointer<T>: a pointer into shared memory whose every load and store the simulator sees,
// so that it can count the bank conflicts of a warp's accesses (bank_conflicts.h: Counters). Under
// nvcc `SharedPointer<T>` is `T*` (kernels/cuda/common.cuh), so the kernels read the same and
// compile to the same instructions; here each access through it is recorded with its size and the
// address of the kernel instruction that makes it (the operators are always inlined into the
// kernel), which is how the simulator groups the lanes of a warp that execute it together.
//
// `owner` names what the accesses are counted under: the function that took the pointer
// (dynamic_shared_memory or shared_pointer in a kernel or a device function).
#pragma once

#include <cstddef>
#include <type_traits>

#include "tests/cuda_sim/bank_conflicts.h"
#include "tests/cuda_sim/block_runner.h"

namespace mixgpt::cuda_sim {

#define MIXGPT_SIM_INLINE __attribute__((always_inline)) inline

// One element of shared memory: reading it is a load, assigning to it a store.
template <typename T>
class SharedReference {
public:
    MIXGPT_SIM_INLINE SharedReference(T* address, const char* owner) : address_(address), owner_(owner) {}

    MIXGPT_SIM_INLINE operator std::remove_const_t<T>() const {
        record_shared_access(owner_, address_, sizeof(T));
        return *address_;
    }
    MIXGPT_SIM_INLINE const SharedReference& operator=(const std::remove_const_t<T>& value) const {
        record_shared_access(owner_, address_, sizeof(T));
        *address_ = value;
        return *this;
    }
    MIXGPT_SIM_INLINE const SharedReference& operator=(const SharedReference& other) const {
        return *this = static_cast<std::remove_const_t<T>>(other);
    }
    MIXGPT_SIM_INLINE const SharedReference& operator+=(const std::remove_const_t<T>& value) const {
        const std::remove_const_t<T> sum = static_cast<std::remove_const_t<T>>(*this) + value;
        return *this = sum;
    }

private:
    T* address_;
    const char* owner_;
};

template <typename T>
class SharedPointer {
public:
    SharedPointer() = default;
    MIXGPT_SIM_INLINE SharedPointer(T* address, const char* owner) : address_(address), owner_(owner) {}
    // SharedPointer<T> to SharedPointer<const T>, as T* converts to const T*.
    template <typename U, typename = std::enable_if_t<std::is_convertible_v<U*, T*>>>
    MIXGPT_SIM_INLINE SharedPointer(const SharedPointer<U>& other)
        : address_(other.get()), owner_(other.owner()) {}

    MIXGPT_SIM_INLINE SharedReference<T> operator*() const { return {address_, owner_}; }
    MIXGPT_SIM_INLINE SharedReference<T> operator[](std::ptrdiff_t index) const {
        return {address_ + index, owner_};
    }
    MIXGPT_SIM_INLINE SharedPointer operator+(std::ptrdiff_t offset) const {
        return {address_ + offset, owner_};
    }

    T* get() const { return address_; }
    const char* owner() const { return owner_; }

private:
    T* address_ = nullptr;
    const char* owner_ = nullptr;
};

// atomicAdd on a shared word (CUDA's atomicAdd(unsigned*, unsigned) on a shared address): one
// load and one store as the bank counters see it. Atomic as written, as device_functions.h's.
MIXGPT_SIM_INLINE unsigned atomicAdd(SharedPointer<unsigned> address, unsigned value) {
    const unsigned old = address[0];
    address[0] = old + value;
    return old;
}

#undef MIXGPT_SIM_INLINE

}  // namespace mixgpt::cuda_sim
