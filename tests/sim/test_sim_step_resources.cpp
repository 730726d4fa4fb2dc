// What a warm training step on the CUDA backend asks of the CUDA libraries, read from the
// simulator's counters (kernels/cuda_sim/runtime.h). The CUDA backend issue asks for no device
// allocation inside the step loop, matmul descriptors and algorithms cached per shape, and no
// host synchronization inside a step except where a number is printed. Checked per step after
// the first (which sizes the scratch buffers and plans each product shape):
//   - no cudaMalloc or cudaFree;
//   - no cuBLASLt descriptor created and no heuristic asked;
//   - one kernel wait: the simulator runs a stream's kernels only when the host waits for them,
//     so a step whose host waited mid-way (a loss read early, a skip decided on the host) has
//     two. The one is the read of the losses and the step status for the step's log line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cuda_sim/runtime.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using cuda_sim::RuntimeCounters;
using namespace testing_support;

struct StepCase {
    const char* name;
    Precision precision;
    int accumulation_steps;
    Recompute recompute;
};

class SimStepResources : public ::testing::TestWithParam<StepCase> {};

TEST_P(SimStepResources, AWarmStepAllocatesNothingPlansNothingAndWaitsOnceAtItsEnd) {
    const StepCase& step_case = GetParam();
    test::TempDirectory directory("mixgpt_sim_step_resources");
    TrainOptions options = tiny_train_options(directory.file("run"));
    options.device = "cuda";
    options.precision = step_case.precision;
    options.recompute = step_case.recompute;
    options.total_batch_tokens = int64_t{options.batch_size} * options.seq_len * step_case.accumulation_steps;
    options.steps = 5;
    std::vector<RuntimeCounters> readings;  // after each step's metrics are known
    const TrainResult result =
        run_training(options, [&](const TrainMetrics&) { readings.push_back(cuda_sim::runtime_counters()); });
    ASSERT_EQ(result.steps_done, options.steps);
    ASSERT_EQ(readings.size(), static_cast<size_t>(options.steps));
    // The counters see what the first step and the set-up asked for.
    EXPECT_GT(readings[0].device_allocations, 0u);
    EXPECT_GT(readings[0].matmul_plans, 0u);
    for (size_t step = 1; step < readings.size(); ++step) {
        const RuntimeCounters &before = readings[step - 1], &after = readings[step];
        SCOPED_TRACE("step " + std::to_string(step + 1));
        EXPECT_GT(after.kernel_launches, before.kernel_launches);
        EXPECT_GT(after.matmuls, before.matmuls);
        EXPECT_EQ(after.device_allocations, before.device_allocations);
        EXPECT_EQ(after.device_frees, before.device_frees);
        EXPECT_EQ(after.matmul_plans, before.matmul_plans);
        EXPECT_EQ(after.kernel_waits - before.kernel_waits, 1u);
    }
}

INSTANTIATE_TEST_SUITE_P(SimPrecisions, SimStepResources,
                         ::testing::Values(StepCase{"bf16", Precision::bf16, 1, Recompute::none},
                                           StepCase{"fp16_loss_scaling", Precision::fp16, 1, Recompute::none},
                                           StepCase{"fp32_accumulation_recompute", Precision::fp32, 2,
                                                    Recompute::full}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace mixgpt
