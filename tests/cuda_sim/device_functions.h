// The CUDA device functions the kernels call, for the simulator: barriers, warp shuffles, integer
// atomics and bit casts, in the global namespace under their CUDA names. Only what the kernels call
// is here (no __shfl_up_sync or __shfl_down_sync).
//
// Shuffles follow the CUDA C++ Programming Guide ("Warp Shuffle Functions"): `width` (a power of 2
// from 1 to warpSize, else a fault: the guide leaves other widths undefined) splits the warp into
// groups of `width` consecutive lanes;
//   - __shfl_sync reads lane srcLane modulo width of the caller's own group;
//   - __shfl_xor_sync reads lane (caller ^ laneMask): "each group of width consecutive threads are
//     able to access elements from earlier groups of threads, however if they attempt to access
//     elements from later groups of threads their own value of var will be returned" (the PTX ISA's
//     shfl.sync.bfly says the same: the source j is taken when j <= the last lane of the caller's
//     group). A laneMask outside 0..31 is a fault: the guide's rule and the PTX ISA's (which reads
//     only its low 5 bits) disagree there.
// Reading from a lane outside `mask` is a fault.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "tests/cuda_sim/block_runner.h"

namespace mixgpt::cuda_sim {

template <typename T>
struct ShuffleDeposit {
    T value;  // first, so a result slot holds just the value
    int source;
};

template <typename T>
void resolve_shuffle(const LaneSlot (&deposits)[32], LaneSlot (&results)[32], unsigned lanes) {
    for (int l = 0; l < 32; ++l) {
        if (!(lanes >> l & 1u)) continue;
        ShuffleDeposit<T> mine;
        std::memcpy(&mine, deposits[l].bytes, sizeof mine);
        std::memcpy(results[l].bytes, deposits[mine.source].bytes, sizeof(T));
    }
}

inline void resolve_nothing(const LaneSlot (&)[32], LaneSlot (&)[32], unsigned) {}

// The value `source` holds, for every lane of `mask`; `source` is this lane's choice.
template <typename T>
T shuffle(const char* instruction, unsigned mask, T value, int source) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "a register-sized value");
    if (source < 0 || source > 31 || !(mask >> source & 1u))
        fault(std::string(instruction) + " reads lane " + std::to_string(source) + ", outside the mask");
    const ShuffleDeposit<T> deposit{value, source};
    const LaneSlot& result = warp_collective(instruction, mask, &deposit, sizeof deposit, resolve_shuffle<T>);
    T out;
    std::memcpy(&out, result.bytes, sizeof out);
    return out;
}

}  // namespace mixgpt::cuda_sim

inline void __syncthreads() { mixgpt::cuda_sim::sync_threads(); }

inline void __syncwarp(unsigned mask = 0xffffffffu) {
    mixgpt::cuda_sim::warp_collective("__syncwarp", mask, nullptr, 0, mixgpt::cuda_sim::resolve_nothing);
}

namespace mixgpt::cuda_sim {

// The first lane of the caller's group of `width` lanes; faults on a width the guide leaves undefined.
inline int shuffle_group_start(const char* instruction, int width) {
    if (width < 1 || width > 32 || (width & (width - 1)) != 0)
        fault(std::string(instruction) + ": width " + std::to_string(width) +
              " is not a power of 2 from 1 to 32");
    return lane() & ~(width - 1);
}

}  // namespace mixgpt::cuda_sim

template <typename T>
T __shfl_sync(unsigned mask, T value, int source_lane, int width = 32) {
    using namespace mixgpt::cuda_sim;
    // source_lane modulo width, negative ones included (two's complement: the low bits).
    return shuffle("__shfl_sync", mask, value,
                   shuffle_group_start("__shfl_sync", width) + (source_lane & (width - 1)));
}

template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
    using namespace mixgpt::cuda_sim;
    const int group_end =
        shuffle_group_start("__shfl_xor_sync", width) + width;  // one past the caller's group
    if (lane_mask < 0 || lane_mask > 31)
        fault("__shfl_xor_sync: laneMask " + std::to_string(lane_mask) + " outside 0..31");
    const int source = lane() ^ lane_mask;
    return shuffle("__shfl_xor_sync", mask, value, source < group_end ? source : lane());
}

template <typename To, typename From>
To mixgpt_sim_bit_cast(From from) {
    static_assert(sizeof(To) == sizeof(From), "same size");
    To to;
    std::memcpy(&to, &from, sizeof to);
    return to;
}
inline float __int_as_float(int x) { return mixgpt_sim_bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return mixgpt_sim_bit_cast<float>(x); }
inline unsigned __float_as_uint(float x) { return mixgpt_sim_bit_cast<unsigned>(x); }

// Integer atomics. A simulated thread runs until a barrier or a warp collective, and blocks run one
// after another, so a read-modify-write is atomic as written. Each returns the old value, as CUDA's.
inline unsigned atomicMax(unsigned* address, unsigned value) {
    const unsigned old = *address;
    if (value > old) *address = value;
    return old;
}
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
    const unsigned long long old = *address;
    *address = old + value;
    return old;
}
