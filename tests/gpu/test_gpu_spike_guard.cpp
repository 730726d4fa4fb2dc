// The loss-spike guard (train/spike_guard.h) on the CUDA backend: the CPU tests' planted spike
// (tests/spike_guard_runs.h) is held without changing a weight, held steps in a row stop the run
// with a checkpoint, and a guarded run resumes bit for bit (fp16: loss scaling beside the guard).
// The guard's decision is the host's, between the gradients' norm and the update
// (tests/sim/test_sim_step_resources.cpp counts the wait it adds).
#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_support.h"
#include "tests/spike_guard_runs.h"

namespace mixgpt {
namespace {

using namespace testing_support;

TEST(GpuTrainingSpikeGuard, APlantedSpikeIsHeldAndChangesNoWeight) {
    MIXGPT_GPU_OR_SKIP();
    expect_planted_spike_held("cuda", "mixgpt_gpu_spike_held");
}

TEST(GpuTrainingSpikeGuard, HeldStepsInARowStopTheRunWithACheckpoint) {
    MIXGPT_GPU_OR_SKIP();
    expect_held_steps_in_a_row_stop_the_run("cuda", "mixgpt_gpu_spike_stop");
}

TEST(GpuTrainingSpikeGuard, Fp16ResumeEqualsAStraightRun) {
    MIXGPT_GPU_OR_SKIP();
    TrainOptions options = spike_guard_options("cuda", "");
    options.precision = Precision::fp16;
    expect_guarded_resume_equals_straight_run(options, "mixgpt_gpu_spike_resume_fp16");
}

}  // namespace
}  // namespace mixgpt
