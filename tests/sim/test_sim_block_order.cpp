// The order the simulator runs a launch's blocks in (kernels/cuda_sim/block_runner.h): ascending
// under the forward schedule, descending under the backward one. A block that reads what another
// block of the same launch writes, with nothing on a GPU to order the two, then sees the write in
// one schedule and the poison in the other. scripts/run_tests.sh runs this under both.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cuda_sim/block_runner.h"

namespace mixgpt {
namespace {

bool backward_schedule() {
    const char* name = std::getenv("MIXGPT_CUDA_SIM_SCHEDULE");
    return name != nullptr && std::strcmp(name, "backward") == 0;
}

TEST(SimBlockOrder, BlocksRunAscendingForwardAndDescendingBackward) {
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

}  // namespace
}  // namespace mixgpt
