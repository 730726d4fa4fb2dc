// The simulated warp shuffles (tests/cuda_sim/device_functions.h) with every width, against the
// CUDA C++ Programming Guide's definitions ("Warp Shuffle Functions"), written here lane by lane
// from its text rather than from the simulator's arithmetic:
//   - "width ... permits sub-division of the warp into segments; for example, exchanging
//     information between 4 groups of 8 lanes";
//   - __shfl_sync: "If srcLane is outside the range [0:width-1], the value returned corresponds to
//     the value of var held by the srcLane modulo width (i.e. within the same subsection)";
//   - __shfl_xor_sync: "calculates a source line ID by performing a bitwise XOR of the caller's
//     lane ID with laneMask ... If width is less than warpSize then each group of width
//     consecutive threads are able to access elements from earlier groups of threads, however if
//     they attempt to access elements from later groups of threads their own value of var will
//     be returned."
// No kernel passes a width today; these hold the simulator to the guide for when one does.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "tests/cuda_sim/block_runner.h"
#include "tests/cuda_sim/device_functions.h"

namespace mixgpt {
namespace {

constexpr int kWarp = 32;
using Lanes = std::array<int, kWarp>;

int value_of(int lane) { return 100 + lane; }  // what each lane offers

// Runs one warp in which lane l computes shuffle(l's value) and records it.
template <typename Shuffle>
Lanes run_warp(Shuffle shuffle) {
    Lanes results{};
    const cudaError_t status = cuda_sim::launch(nullptr, dim3(1), dim3(kWarp), 0, [&] {
        const int lane = static_cast<int>(cuda_sim::position().thread.x);
        results[lane] = shuffle(value_of(lane));
    });
    EXPECT_EQ(status, cudaSuccess);
    return results;
}

// The lanes l's group spans: [first, first + width).
int group_first(int lane, int width) {
    int first = 0;
    while (first + width <= lane) first += width;
    return first;
}

TEST(SimShuffles, XorReadsEarlierGroupsAndTheCallersOwnValueForLaterOnes) {
    for (int width = 1; width <= kWarp; width *= 2)
        for (int lane_mask = 0; lane_mask < kWarp; ++lane_mask) {
            SCOPED_TRACE("width " + std::to_string(width) + ", laneMask " + std::to_string(lane_mask));
            const Lanes results =
                run_warp([=](int value) { return __shfl_xor_sync(0xffffffffu, value, lane_mask, width); });
            for (int lane = 0; lane < kWarp; ++lane) {
                const int source = lane ^ lane_mask;
                const bool later_group = source >= group_first(lane, width) + width;
                EXPECT_EQ(results[lane], later_group ? value_of(lane) : value_of(source)) << "lane " << lane;
            }
        }
}

TEST(SimShuffles, IndexedReadsSourceLaneModuloWidthWithinTheCallersGroup) {
    for (int width = 1; width <= kWarp; width *= 2)
        for (int source_lane = -2 * kWarp; source_lane < 2 * kWarp; source_lane += 3) {
            SCOPED_TRACE("width " + std::to_string(width) + ", srcLane " + std::to_string(source_lane));
            const Lanes results =
                run_warp([=](int value) { return __shfl_sync(0xffffffffu, value, source_lane, width); });
            int modulo = source_lane;  // srcLane modulo width, in [0, width)
            while (modulo < 0) modulo += width;
            while (modulo >= width) modulo -= width;
            for (int lane = 0; lane < kWarp; ++lane)
                EXPECT_EQ(results[lane], value_of(group_first(lane, width) + modulo)) << "lane " << lane;
        }
}

// What the guide leaves undefined is a fault, not a guess.
TEST(SimShuffles, UndefinedWidthsAndLaneMasksFault) {
    const auto faults = [](auto shuffle) {
        return cuda_sim::launch(nullptr, dim3(1), dim3(kWarp), 0, [&] { shuffle(1); }) ==
               cudaErrorLaunchFailure;
    };
    EXPECT_TRUE(faults([](int value) { return __shfl_xor_sync(0xffffffffu, value, 1, 12); }));
    EXPECT_TRUE(faults([](int value) { return __shfl_xor_sync(0xffffffffu, value, 1, 64); }));
    EXPECT_TRUE(faults([](int value) { return __shfl_xor_sync(0xffffffffu, value, 32); }));
    EXPECT_TRUE(faults([](int value) { return __shfl_sync(0xffffffffu, value, 0, 0); }));
    EXPECT_FALSE(faults([](int value) { return __shfl_sync(0xffffffffu, value, 0, 16); }));
}

}  // namespace
}  // namespace mixgpt
