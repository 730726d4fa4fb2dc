// Occupancy as the kernel lab reports it (bench/kernel_lab/lab_occupancy.h): the kernels an op
// launches, recorded by cuda::LaunchRecorder, their names from cudaFuncGetName, and their blocks
// per SM from the simulated cudaOccupancyMaxActiveBlocksPerMultiprocessor, which answers from the
// device's limits (tests/cuda_sim/device_limits.h). The flash forward at head dim 128 must fit
// at least two blocks per SM on sm_80 and sm_90, registers included (ptxas -v: 126 per thread on
// both, which the simulator cannot know and the test states).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/kernel_lab/lab_occupancy.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/launch_recorder.h"
#include "tests/cuda_sim/device_limits.h"

namespace mixgpt {
namespace {

// The flash forward's launches for one head dimension, bf16.
std::vector<lab::KernelOccupancy> flash_forward_occupancy(int head_dim) {
    const int B = 1, T = 64, H = 2, C = H * head_dim;
    const std::unique_ptr<Backend> gpu = make_backend({"cuda", 0, Precision::bf16, 0});
    std::vector<Buffer> buffers;
    const auto tensor = [&](DType dtype, std::initializer_list<int64_t> shape) {
        TensorView view(nullptr, dtype, shape);
        buffers.push_back(gpu->allocate(view.bytes()));
        view.data = buffers.back().data();
        return view;
    };
    const TensorView qkv = tensor(DType::bf16, {B, T, 3 * C}), out = tensor(DType::bf16, {B, T, C});
    const TensorView lse = tensor(DType::f32, {B, H, T});
    gpu->synchronize();
    const cuda::LaunchRecorder recorder;
    gpu->attention_forward(out, lse, qkv, multi_head_attention(H));
    gpu->synchronize();
    return lab::occupancy_of(recorder.launches());
}

TEST(SimOccupancy, FlashForwardFitsTwoBlocksPerSmAtEveryHeadDim) {
    for (const int head_dim : {64, 128}) {
        SCOPED_TRACE("head_dim " + std::to_string(head_dim));
        const std::vector<lab::KernelOccupancy> launches = flash_forward_occupancy(head_dim);
        ASSERT_EQ(launches.size(), 1u);
        const lab::KernelOccupancy& forward = launches[0];
        EXPECT_EQ(forward.kernel, "forward_kernel<__nv_bfloat16, " + std::to_string(head_dim) + ">");
        EXPECT_EQ(forward.registers, 0) << "the simulator does not know them";
        // (queries + 4 x keys per tile) rows of head_dim + 8 two-byte elements.
        const size_t shared = head_dim == 64 ? (128 + 4 * 64) * 72 * 2 : (64 + 4 * 32) * 136 * 2;
        EXPECT_EQ(forward.dynamic_shared_bytes, shared);
        const int threads = head_dim == 64 ? 256 : 128;
        EXPECT_EQ(forward.threads, threads);
        // The simulated device: sm_90's 228 KiB less 1 KiB per block.
        const int blocks = cuda_sim::resident_blocks(cuda_sim::device_limits(), threads, 0, shared);
        EXPECT_EQ(forward.blocks_per_multiprocessor, blocks);
        EXPECT_EQ(forward.warps_per_multiprocessor, blocks * threads / 32);
        constexpr int kRegisters = 126;  // ptxas -v, sm_80 and sm_90, both head dims
        EXPECT_GE(cuda_sim::resident_blocks(cuda_sim::sm80_limits(), threads, kRegisters, shared), 2);
        EXPECT_GE(cuda_sim::resident_blocks(cuda_sim::sm90_limits(), threads, kRegisters, shared), 2);
    }
}

TEST(SimOccupancy, TheLimitsOfSm80AndSm90AreThoseOfTheProgrammingGuide) {
    const cuda_sim::DeviceLimits &a100 = cuda_sim::sm80_limits(), &h100 = cuda_sim::sm90_limits();
    // Head dim 128 before its key tiles were halved: 87,040 B, one block on sm_80, two on sm_90.
    EXPECT_EQ(cuda_sim::resident_blocks(a100, 128, 0, 87040), 1);
    EXPECT_EQ(cuda_sim::resident_blocks(h100, 128, 0, 87040), 2);
    // Now 52,224 B: 3 and 4; registers (126 a thread, 16,384 a block) allow 4.
    EXPECT_EQ(cuda_sim::resident_blocks(a100, 128, 126, 52224), 3);
    EXPECT_EQ(cuda_sim::resident_blocks(h100, 128, 126, 52224), 4);
    // Threads, blocks and registers each limit: 64 warps, 32 blocks, 65,536 registers.
    EXPECT_EQ(cuda_sim::resident_blocks(h100, 1024, 0, 0), 2);
    EXPECT_EQ(cuda_sim::resident_blocks(h100, 32, 0, 0), 32);
    EXPECT_EQ(cuda_sim::resident_blocks(h100, 256, 255, 0), 1);  // 255 x 32 rounds to 8,192 a warp
    EXPECT_EQ(cuda_sim::resident_blocks(a100, 32, 0, a100.shared_per_block_optin + 1), 0);
}

TEST(SimOccupancy, KernelNamesAreReadable) {
    EXPECT_EQ(
        lab::readable_kernel_name(
            "_ZN6mixgpt4cuda12_GLOBAL__N_125layernorm_backward_kernelIfLi4EEEvPT_PfPKS3_S7_S7_PKfS9_li"),
        "layernorm_backward_kernel<float, 4>");
    EXPECT_EQ(lab::readable_kernel_name("plain_name"), "plain_name");
}

}  // namespace
}  // namespace mixgpt
