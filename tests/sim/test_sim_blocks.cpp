// How the simulator runs a launch's blocks (tests/cuda_sim/block_runner.h), under both
// schedules (scripts/run_tests.sh):
//   - in ascending order under the forward schedule, descending under the backward one, so a
//     block that reads what another block of the same launch writes, with nothing on a GPU to
//     order the two, sees the write in one schedule and the poison in the other;
//   - every block starts with its static __shared__ variables poisoned (0xff bytes), as with its
//     dynamic shared memory, so a block that reads one before writing it sees NaN, not what the
//     block before it left there;
//   - a launch with more threads per block or dynamic shared memory than its kernel declares
//     (declare_launch_limits) faults, naming the kernel, as __launch_bounds__ has a GPU refuse it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tests/cuda_sim/block_runner.h"

namespace mixgpt {
namespace {

bool backward_schedule() {
    const char* name = std::getenv("MIXGPT_CUDA_SIM_SCHEDULE");
    return name != nullptr && std::strcmp(name, "backward") == 0;
}

TEST(SimBlocks, RunAscendingForwardAndDescendingBackward) {
    const dim3 grid(3, 2, 2);
    std::vector<unsigned> order;  // linear block indices, as the blocks ran
    const cudaError_t status = cuda_sim::launch(nullptr, grid, dim3(64), 0, [&order, grid] {
        const cuda_sim::ThreadPosition& p = cuda_sim::position();
        if (p.thread.x == 0) order.push_back(p.block.x + grid.x * (p.block.y + grid.y * p.block.z));
    });
    ASSERT_EQ(status, cudaSuccess);
    const unsigned blocks = grid.x * grid.y * grid.z;
    ASSERT_EQ(order.size(), blocks);
    for (unsigned k = 0; k < blocks; ++k) EXPECT_EQ(order[k], backward_schedule() ? blocks - 1 - k : k);
}

// A __shared__ variable as tests/cuda_sim/prelude.h declares one for the simulator's build of
// the kernels (a function-local static in the section the simulator poisons).
uint32_t& shared_word() {
    static __attribute__((section("mixgpt_sim_shared"))) uint32_t word;
    return word;
}

TEST(SimBlocks, EachStartsWithItsStaticSharedMemoryPoisoned) {
    std::vector<uint32_t> seen;  // the word as each block found it
    const cudaError_t status = cuda_sim::launch(nullptr, dim3(3), dim3(32), 0, [&seen] {
        if (cuda_sim::position().thread.x != 0) return;
        seen.push_back(shared_word());
        shared_word() = cuda_sim::position().block.x;
    });
    ASSERT_EQ(status, cudaSuccess);
    EXPECT_EQ(seen, std::vector<uint32_t>(3, 0xffffffffu));
}

TEST(SimBlocks, FaultWhenLaunchedAboveTheirKernelsDeclaredLimits) {
    // A kernel declaring at most 128 threads and 64 bytes of dynamic shared memory.
    const auto launch = [](unsigned threads, size_t shared_bytes) {
        testing::internal::CaptureStderr();
        const cudaError_t status = cuda_sim::launch(nullptr, dim3(2), dim3(threads), shared_bytes, [] {
            cuda_sim::expect_launch_limits("probe_kernel", 128, 64);
        });
        return std::make_pair(status, testing::internal::GetCapturedStderr());
    };
    EXPECT_EQ(launch(128, 64).first, cudaSuccess);
    const auto [threads_status, threads_message] = launch(256, 0);
    EXPECT_EQ(threads_status, cudaErrorLaunchFailure);
    EXPECT_NE(threads_message.find("probe_kernel launched with 256 threads per block"), std::string::npos)
        << threads_message;
    EXPECT_EQ(launch(64, 65).first, cudaErrorLaunchFailure);
}

}  // namespace
}  // namespace mixgpt
