// Muon's Newton-Schulz on the CUDA backend runs one strided-batch cuBLASLt product per product of
// the iteration and matrix shape, not one per matrix: read from the simulator's counters
// (tests/cuda_sim/runtime.h). Correctness of the batches: tests/gpu/test_gpu_muon.cpp.
#include <gtest/gtest.h>

#include "kernels/ops.h"
#include "tests/cuda_sim/runtime.h"
#include "train/muon_step.h"

namespace mixgpt {
namespace {

TEST(SimMuonBatches, OneProductPerShapeNotPerMatrix) {
    const auto gpu = make_backend({"cuda", 0, Precision::fp32, 0});
    // Three (16, 48) matrices and one (48, 16): two shapes.
    std::vector<MuonMatrix> matrices;
    int64_t offset = 0;
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{16, 48}, {16, 48}, {16, 48}, {48, 16}}) {
        matrices.push_back({"m" + std::to_string(matrices.size()), offset, rows, cols});
        offset += rows * cols;
    }
    Buffer params = gpu->allocate(static_cast<size_t>(offset) * sizeof(float));
    Buffer grads = gpu->allocate(static_cast<size_t>(offset) * sizeof(float));
    Buffer momentum = gpu->allocate(static_cast<size_t>(offset) * sizeof(float));
    Buffer status = gpu->allocate(sizeof(StepStatus));
    const StepStatus initial;
    gpu->copy_to_backend(status.data(), &initial, sizeof initial);
    MuonHyper hyper;
    const auto arena = [&](const Buffer& buffer) { return TensorView(buffer.data(), DType::f32, {offset}); };
    MuonStep step(*gpu, matrices, hyper.ns_dtype);
    const uint64_t before = cuda_sim::runtime_counters().matmuls;
    step.step(arena(params), arena(grads), arena(momentum), TensorView(), hyper, status.as<StepStatus>());
    gpu->synchronize();
    EXPECT_EQ(cuda_sim::runtime_counters().matmuls - before, uint64_t{3} * hyper.ns_steps * 2);
}

}  // namespace
}  // namespace mixgpt
