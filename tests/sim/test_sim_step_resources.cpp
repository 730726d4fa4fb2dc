// What a warm training step on the CUDA backend asks of the CUDA libraries, read from the
// simulator's counters (tests/cuda_sim/runtime.h). The CUDA backend issue asks for no device
// allocation inside the step loop, matmul descriptors and algorithms cached per shape, and no
// host synchronization inside a step except where a number is printed. Checked per step after
// the first (which sizes the scratch buffers and plans each product shape):
//   - no cudaMalloc or cudaFree;
//   - no cuBLASLt descriptor created and no heuristic asked;
//   - one run of computations: the host waits for the device only after the step's last kernel,
//     product or collective, to read the losses and the step status for its log line. A step
//     whose host waited mid-way (a loss read early, a skip decided on the host) has two runs.
//     With the loss-spike guard (train --skip-spikes) a step has exactly two: the guard's decision
//     is the host's, between the gradients' norm and the update (train/spike_guard.h).
// The same holds for a step over a 1-rank NCCL communicator, whose collectives run on their own
// stream, ordered with the compute stream by events: replicated or ZeRO-1, the buckets exchanged
// during the backward pass or after it. With --optimizer muon too: its iteration's products are
// planned in the first step, and skip stays on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "tests/cuda_sim/runtime.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "dist/device_communicator.h"
#include "train/loss_scaling.h"
#include "train/train_step.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using cuda_sim::RuntimeCounters;
using namespace testing_support;

// readings[i]: the counters after step i (readings[0] may be before the first); steps from
// `first_warm` on compute, and allocate, plan and wait for nothing more than the rule says: `runs`
// runs of computations each.
void expect_warm_steps(const std::vector<RuntimeCounters>& readings, size_t first_warm, size_t runs = 1) {
    for (size_t i = first_warm; i < readings.size(); ++i) {
        const RuntimeCounters &before = readings[i - 1], &after = readings[i];
        SCOPED_TRACE("reading " + std::to_string(i));
        EXPECT_GT(after.kernel_launches, before.kernel_launches);
        EXPECT_GT(after.matmuls, before.matmuls);
        EXPECT_EQ(after.device_allocations, before.device_allocations);
        EXPECT_EQ(after.device_frees, before.device_frees);
        EXPECT_EQ(after.matmul_plans, before.matmul_plans);
        EXPECT_EQ(after.compute_runs - before.compute_runs, runs);
    }
}

struct StepCase {
    const char* name;
    Precision precision;
    int accumulation_steps;
    Recompute recompute;
    OptimizerKind optimizer = OptimizerKind::adamw;
};

void PrintTo(const StepCase& step_case, std::ostream* out) { *out << step_case.name; }

class SimStepResources : public ::testing::TestWithParam<StepCase> {};

TEST_P(SimStepResources, AWarmStepAllocatesNothingPlansNothingAndWaitsOnlyAtItsEnd) {
    const StepCase& step_case = GetParam();
    test::TempDirectory directory("mixgpt_sim_step_resources");
    TrainOptions options = tiny_train_options(directory.file("run"));
    options.device = "cuda";
    options.precision = step_case.precision;
    options.recompute = step_case.recompute;
    options.optimizer = step_case.optimizer;
    options.total_batch_tokens = int64_t{options.batch_size} * options.seq_len * step_case.accumulation_steps;
    options.steps = 5;
    // The final evaluation, after the steps counted, reads one batch: the whole split was most of the run.
    options.eval_batches = 1;
    std::vector<RuntimeCounters> readings;  // after each step's metrics are known
    const TrainResult result =
        run_training(options, [&](const TrainMetrics&) { readings.push_back(cuda_sim::runtime_counters()); });
    ASSERT_EQ(result.steps_done, options.steps);
    ASSERT_EQ(readings.size(), static_cast<size_t>(options.steps));
    // The counters see what the first step and the set-up asked for.
    EXPECT_GT(readings[0].device_allocations, 0u);
    EXPECT_GT(readings[0].matmul_plans, 0u);
    expect_warm_steps(readings, 1);
}

INSTANTIATE_TEST_SUITE_P(
    SimPrecisions, SimStepResources,
    ::testing::Values(StepCase{"bf16", Precision::bf16, 1, Recompute::none},
                      StepCase{"fp16_loss_scaling", Precision::fp16, 1, Recompute::none},
                      StepCase{"fp32_accumulation_recompute", Precision::fp32, 2, Recompute::full},
                      StepCase{"bf16_muon", Precision::bf16, 1, Recompute::none, OptimizerKind::muon}),
    [](const auto& info) { return std::string(info.param.name); });

// Guarded steps judged (a window of 2: from step 3 on) and not: two runs each, nothing allocated.
TEST(SimSpikeGuardStepResources, AGuardedStepWaitsTwiceAndAllocatesNothing) {
    test::TempDirectory directory("mixgpt_sim_spike_guard_resources");
    TrainOptions options = tiny_train_options(directory.file("run"));
    options.device = "cuda";
    options.precision = Precision::bf16;
    options.skip_spikes = 3;
    options.spike_window = 2;
    options.steps = 5;
    options.eval_batches = 1;
    std::vector<RuntimeCounters> readings;
    const TrainResult result =
        run_training(options, [&](const TrainMetrics&) { readings.push_back(cuda_sim::runtime_counters()); });
    ASSERT_EQ(result.steps_done, options.steps);
    expect_warm_steps(readings, 1, 2);
}

struct ExchangeCase {
    const char* name;
    bool sharded, overlap;
};

void PrintTo(const ExchangeCase& exchange_case, std::ostream* out) { *out << exchange_case.name; }

class SimDataParallelStepResources : public ::testing::TestWithParam<ExchangeCase> {};

TEST_P(SimDataParallelStepResources, AWarmStepAllocatesNothingAndWaitsOnlyAtItsEnd) {
    constexpr int kBatch = 2, kSeqLen = 16, kAccumulation = 2, kSteps = 4;
    const std::unique_ptr<Backend> backend = make_backend({"cuda", 0, Precision::bf16, 0});
    const GPTConfig config = tiny_config();
    const std::unique_ptr<Communicator> nccl =
        make_nccl_communicator(std::make_unique<SingleProcessCommunicator>(), *backend, 120);
    DataParallelConfig parallel;
    parallel.shard_optimizer = GetParam().sharded;
    parallel.overlap = GetParam().overlap;
    parallel.bucket_bytes = 4096;  // several buckets
    GPT model(*backend, config, kBatch, kSeqLen, Recompute::none,
              TrainStep::sharding(config, *nccl, parallel));
    load_initial_parameters(model, 5);
    const LossScalePolicy scaling = parse_loss_scale("auto", Precision::bf16);
    TrainStep step(model, *nccl, kAccumulation, scaling.config(), scaling.initial_status(), parallel);
    AdamWHyper hyper;
    hyper.learning_rate = 1e-3f;
    std::vector<RuntimeCounters> readings{cuda_sim::runtime_counters()};
    for (int s = 0; s < kSteps; ++s) {
        EXPECT_TRUE(std::isfinite(
            random_training_step(step, kAccumulation, kBatch, kSeqLen, config.vocab_size, s, hyper)));
        readings.push_back(cuda_sim::runtime_counters());
    }
    expect_warm_steps(readings, 2);  // readings[1]: after the first step
}

INSTANTIATE_TEST_SUITE_P(SimExchanges, SimDataParallelStepResources,
                         ::testing::Values(ExchangeCase{"replicated_overlapped", false, true},
                                           ExchangeCase{"replicated_after_backward", false, false},
                                           ExchangeCase{"zero1_overlapped", true, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace mixgpt
