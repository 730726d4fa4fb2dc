// cub::DeviceRadixSort::SortPairs for the simulator, under CUB's own header name: the simulator's
// kernel build puts tests/cuda_sim/include/ ahead of the CUDA toolkit's headers, whose CUB
// device code only nvcc compiles.
// Same contract as CUB's: a first call with null storage asks for the temporary storage size;
// the sort runs on the stream (runtime.h), is stable and orders the keys by bits
// [begin_bit, end_bit) as CUB orders signed integers (the sign bit flipped, negative keys first).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "tests/cuda_sim/runtime.h"

namespace cub {

struct DeviceRadixSort {
    static constexpr size_t kTemporaryBytes = 256;  // a nonzero size, as CUB asks for

    template <typename Key, typename Value>
    static cudaError_t SortPairs(void* temporary, size_t& temporary_bytes, const Key* keys_in, Key* keys_out,
                                 const Value* values_in, Value* values_out, int count, int begin_bit = 0,
                                 int end_bit = sizeof(Key) * 8, cudaStream_t stream = nullptr) {
        static_assert(std::is_integral_v<Key> && sizeof(Key) == 4, "32-bit integer keys");
        if (temporary == nullptr) {
            temporary_bytes = kTemporaryBytes;
            return cudaSuccess;
        }
        if (temporary_bytes < kTemporaryBytes || count < 0 || begin_bit < 0 || end_bit > 32 ||
            begin_bit >= end_bit)
            return cudaErrorInvalidValue;
        mixgpt::cuda_sim::enqueue_compute(stream, [=] {
            const uint32_t sign = std::is_signed_v<Key> ? 0x80000000u : 0u;
            const uint32_t mask =
                (end_bit - begin_bit == 32 ? 0xffffffffu : ((1u << (end_bit - begin_bit)) - 1u)) << begin_bit;
            const auto radix = [&](Key key) { return (static_cast<uint32_t>(key) ^ sign) & mask; };
            std::vector<int> order(static_cast<size_t>(count));
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(),
                             [&](int a, int b) { return radix(keys_in[a]) < radix(keys_in[b]); });
            std::vector<Key> keys(static_cast<size_t>(count));
            std::vector<Value> values(static_cast<size_t>(count));
            for (int i = 0; i < count; ++i) {
                keys[i] = keys_in[order[i]];
                values[i] = values_in[order[i]];
            }
            std::copy(keys.begin(), keys.end(), keys_out);
            std::copy(values.begin(), values.end(), values_out);
        });
        return cudaSuccess;
    }
};

}  // namespace cub
