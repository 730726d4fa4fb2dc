// Shared-memory bank conflicts of the flash attention kernels' ldmatrix loads, counted by the CUDA
// simulator (kernels/cuda_sim/), which sees every lane's row address. flash_tiles.cuh pads each
// tile row by 16 bytes so that the 8 rows of an ldmatrix phase fall on distinct banks; these
// tests hold the forward and backward kernels, at head dims 64 and 128, to zero extra wavefronts.
// The counter itself is checked first on rows 64 bytes apart (4 rows per bank group: 3 extra
// wavefronts a phase) and 80 bytes apart (none). Built into build/mixgpt_sim_tests only.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/backend_factory.h"
#include "kernels/cuda_sim/block_runner.h"
#include "kernels/cuda_sim/warp_matrix.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

// One warp's ldmatrix.x4 over rows `pitch` bytes apart: lane l gives row l of 32.
cuda_sim::Counters count_one_load(int pitch) {
    cuda_sim::reset_counters();
    const cudaError_t status = cuda_sim::launch(nullptr, dim3(1), dim3(32), size_t{32} * pitch, [pitch] {
        uint32_t registers[4];
        cuda_sim::load_matrix_x4<false>(registers,
                                        cuda_sim::dynamic_shared_memory() + cuda_sim::lane() * pitch);
    });
    EXPECT_EQ(status, cudaSuccess);
    return cuda_sim::counters();
}

TEST(SimBankConflicts, TheCounterSeesConflictingRows) {
    const cuda_sim::Counters packed = count_one_load(64), padded = count_one_load(80);
    EXPECT_EQ(packed.ldmatrix_phases, 4u);
    EXPECT_EQ(packed.ldmatrix_extra_wavefronts, 4u * 3u);
    EXPECT_EQ(padded.ldmatrix_phases, 4u);
    EXPECT_EQ(padded.ldmatrix_extra_wavefronts, 0u);
}

class SimFlashBankConflicts : public ::testing::TestWithParam<int> {};

TEST_P(SimFlashBankConflicts, EveryLdmatrixPhaseIsOneWavefront) {
    const int head_dim = GetParam(), B = 1, T = 150, H = 2, C = H * head_dim;
    const std::unique_ptr<Backend> gpu = make_backend({"cuda", 0, Precision::bf16, 0});
    const auto tensor = [&](std::vector<Buffer>& keep, DType dtype, std::initializer_list<int64_t> shape,
                            uint32_t seed) {
        TensorView view(nullptr, dtype, shape);
        keep.push_back(gpu->allocate(view.bytes()));
        view.data = keep.back().data();
        const std::vector<double> values = test::random_normal(static_cast<size_t>(view.numel()), seed);
        const std::vector<float> floats(values.begin(), values.end());
        std::vector<uint8_t> bytes(view.bytes());
        convert_from_float(floats.data(), bytes.data(), dtype, floats.size());
        gpu->copy_to_backend(view.data, bytes.data(), bytes.size());
        return view;
    };
    std::vector<Buffer> buffers;
    const TensorView qkv = tensor(buffers, DType::bf16, {B, T, 3 * C}, 1);
    const TensorView out = tensor(buffers, DType::bf16, {B, T, C}, 2);
    const TensorView lse = tensor(buffers, DType::f32, {B, H, T}, 3);
    const TensorView dout = tensor(buffers, DType::bf16, {B, T, C}, 4);
    const TensorView dqkv = tensor(buffers, DType::bf16, {B, T, 3 * C}, 5);

    gpu->synchronize();
    cuda_sim::reset_counters();
    gpu->attention_forward(out, lse, qkv, H);
    gpu->synchronize();  // the simulator runs a stream's work when the host waits for it
    const cuda_sim::Counters forward = cuda_sim::counters();
    gpu->attention_backward(dqkv, dout, qkv, out, lse, H);
    gpu->synchronize();
    const cuda_sim::Counters both = cuda_sim::counters();
    EXPECT_GT(forward.ldmatrix_phases, 0u) << "the flash forward kernel ran";
    EXPECT_GT(both.ldmatrix_phases, forward.ldmatrix_phases) << "the flash backward kernels ran";
    EXPECT_EQ(both.ldmatrix_extra_wavefronts, 0u) << both.ldmatrix_phases << " phases";
    std::printf("flash attention bf16, head_dim %d, T = %d: %llu ldmatrix phases, %llu extra wavefronts\n",
                head_dim, T, static_cast<unsigned long long>(both.ldmatrix_phases),
                static_cast<unsigned long long>(both.ldmatrix_extra_wavefronts));
}

INSTANTIATE_TEST_SUITE_P(SimHeadDims, SimFlashBankConflicts, ::testing::Values(64, 128));

}  // namespace
}  // namespace mixgpt
