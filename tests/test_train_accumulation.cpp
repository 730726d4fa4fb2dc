// Gradient accumulation on the CPU backend: k = 4 micro-batches of B/4 equal one batch of B
// (tests/train_equivalence.h; the GPU runs the same in tests/gpu/test_gpu_training.cpp).
#include <gtest/gtest.h>

#include "tests/train_equivalence.h"

namespace mixgpt {
namespace {

TEST(TrainAccumulationTest, FourMicroBatchesEqualOneBatch) {
    const std::unique_ptr<Backend> backend = testing_support::cpu_backend(Precision::fp32);
    testing_support::expect_four_micro_batches_equal_one_batch(*backend);
}

}  // namespace
}  // namespace mixgpt
