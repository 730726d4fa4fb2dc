// --optimizer muon is not yet on the CUDA backend (#37): train refuses a CUDA device in one line
// before the first step, and Muon's CUDA ops, called all the same, throw.
#include <gtest/gtest.h>

#include "kernels/ops.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

TEST(GpuMuon, TrainRefusesTheCudaBackendInOneLine) {
    MIXGPT_GPU_OR_SKIP();
    test::TempDirectory directory("mixgpt_gpu_muon");
    TrainOptions options = testing_support::tiny_train_options(directory.file("run"));
    options.device = "cuda";
    options.optimizer = OptimizerKind::muon;
    const std::string error = test::error_of([&] { run_training(options); });
    EXPECT_NE(error.find("optimizer: muon is not yet on the CUDA backend (#37)"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(GpuMuon, OpsThrowNotYet) {
    MIXGPT_GPU_OR_SKIP();
    const auto backend = make_backend({"cuda", 0, Precision::fp32, 0});
    StepStatus status;
    const std::string error = test::error_of([&] { backend->muon_newton_schulz(TensorView(), 5, &status); });
    EXPECT_NE(error.find("cuda muon_newton_schulz: not yet on the CUDA backend (#37)"), std::string::npos)
        << error;
}

}  // namespace
}  // namespace mixgpt
