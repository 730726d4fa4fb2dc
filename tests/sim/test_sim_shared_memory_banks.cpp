// Shared-memory bank conflicts counted by the CUDA simulator (tests/cuda_sim/), which sees every
// lane's address of an ldmatrix and of each load and store through SharedPointer. The counters
// are checked on accesses whose conflicts are known: ldmatrix rows 64 bytes apart (4 rows per
// bank group: 3 extra wavefronts a phase) and 80 bytes apart (none); 4-, 8- and 16-byte accesses
// at strides that do and do not conflict; a strided access injected into an owner with a budget
// breaks it. Then the flash attention kernels (flash_tiles.cuh pads each tile row by 16 bytes so
// that the 8 rows of an ldmatrix phase fall on distinct banks), forward and backward at head dims
// 64 and 128, are held to zero extra ldmatrix wavefronts. Every other test's kernels are held to
// their budgets by shared_bank_budgets.cpp. Built into build/mixgpt_sim_tests only.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/backend_factory.h"
#include "tests/cuda_sim/bank_conflicts.h"
#include "tests/cuda_sim/block_runner.h"
#include "tests/cuda_sim/shared_pointer.h"
#include "tests/cuda_sim/warp_matrix.h"
#include "tests/sim/shared_bank_budgets.h"
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

// One warp's store of an Element through SharedPointer: lane l writes element l * stride, then,
// its second instruction, every lane reads element 0. Returns the counts of `owner`, and resets
// the counters (the test's own accesses are not held to the kernels' budgets).
template <typename Element>
cuda_sim::SharedAccessCounts count_one_store(int stride, const char* owner = "test") {
    cuda_sim::reset_counters();
    const cudaError_t status =
        cuda_sim::launch(nullptr, dim3(1), dim3(32), sizeof(Element) * 32 * stride + sizeof(Element), [&] {
            const cuda_sim::SharedPointer<Element> shared(
                reinterpret_cast<Element*>(cuda_sim::dynamic_shared_memory()), owner);
            shared[cuda_sim::lane() * stride] = Element{};
            const Element first = shared[0];
            (void)first;
        });
    EXPECT_EQ(status, cudaSuccess);
    const cuda_sim::Counters counters = cuda_sim::counters();
    cuda_sim::reset_counters();
    const auto found = counters.shared_accesses.find(owner);
    return found == counters.shared_accesses.end() ? cuda_sim::SharedAccessCounts{} : found->second;
}

TEST(SimBankConflicts, TheCounterSeesEachWarpInstructionsConflicts) {
    // 4-byte words: one phase a request; a stride of n words puts 32 / (32 / gcd) lanes on a bank.
    const cuda_sim::SharedAccessCounts consecutive = count_one_store<float>(1);
    EXPECT_EQ(consecutive.requests, 2u);  // the store and the broadcast read
    EXPECT_EQ(consecutive.phases, 2u);
    EXPECT_EQ(consecutive.extra_wavefronts, 0u);
    EXPECT_EQ(consecutive.worst_phase, 1);
    EXPECT_EQ(count_one_store<float>(2).extra_wavefronts, 1u);    // 2-way
    EXPECT_EQ(count_one_store<float>(8).extra_wavefronts, 7u);    // 8-way: LayerNorm's old bf16 layout
    EXPECT_EQ(count_one_store<float>(32).extra_wavefronts, 31u);  // every lane on bank 0
    EXPECT_EQ(count_one_store<float>(33).extra_wavefronts, 0u);   // an odd pitch
    // 8-byte accesses in two half-warp phases, 16-byte ones in four quarter-warp phases.
    const cuda_sim::SharedAccessCounts doubles = count_one_store<double>(1);
    EXPECT_EQ(doubles.phases, 2u + 2u);  // every phase of the read of element 0 has lanes
    EXPECT_EQ(doubles.extra_wavefronts, 0u);
    EXPECT_EQ(count_one_store<double>(2).extra_wavefronts, 2u);  // 2-way in each half
    const cuda_sim::SharedAccessCounts vectors = count_one_store<uint4>(1);
    EXPECT_EQ(vectors.phases, 4u + 4u);
    EXPECT_EQ(vectors.extra_wavefronts, 0u);
    EXPECT_EQ(count_one_store<uint4>(2).extra_wavefronts, 4u);  // 2-way in each quarter
}

TEST(SimBankConflicts, AStridedAccessInjectedIntoAKernelBreaksItsBudget) {
    const std::vector<test::SharedBankBudget>& budgets = test::shared_bank_budgets();
    cuda_sim::Counters counters;
    counters.shared_accesses["layernorm_backward_kernel"] =
        count_one_store<float>(1, "layernorm_backward_kernel");
    EXPECT_TRUE(test::shared_bank_violations(counters, budgets).empty());
    counters.shared_accesses["layernorm_backward_kernel"] =
        count_one_store<float>(8, "layernorm_backward_kernel");
    const std::vector<std::string> violations = test::shared_bank_violations(counters, budgets);
    ASSERT_EQ(violations.size(), 1u);
    EXPECT_NE(violations[0].find("layernorm_backward_kernel: 2 requests, 7 extra wavefronts, up to 8"),
              std::string::npos)
        << violations[0];
    counters.shared_accesses.clear();
    counters.shared_accesses["a_kernel_without_budget"] =
        count_one_store<float>(1, "a_kernel_without_budget");
    EXPECT_EQ(test::shared_bank_violations(counters, budgets).size(), 1u);
}

// A tensor of `shape` on `gpu` holding normal random values, its memory kept in `keep`.
TensorView random_tensor(Backend& gpu, std::vector<Buffer>& keep, DType dtype,
                         std::initializer_list<int64_t> shape, uint32_t seed) {
    TensorView view(nullptr, dtype, shape);
    keep.push_back(gpu.allocate(view.bytes()));
    view.data = keep.back().data();
    const std::vector<double> values = test::random_normal(static_cast<size_t>(view.numel()), seed);
    const std::vector<float> floats(values.begin(), values.end());
    std::vector<uint8_t> bytes(view.bytes());
    convert_from_float(floats.data(), bytes.data(), dtype, floats.size());
    gpu.copy_to_backend(view.data, bytes.data(), bytes.size());
    return view;
}

// LayerNorm backward at GPT-2's width, where every lane of a warp holds columns: its per-warp
// column accumulators in shared memory take one wavefront a phase (kernels/cuda/layernorm.cu).
class SimLayerNormBankConflicts : public ::testing::TestWithParam<Precision> {};

TEST_P(SimLayerNormBankConflicts, TheColumnAccumulatorsAreFreeOfConflicts) {
    const int rows = 64, C = 768;
    const std::unique_ptr<Backend> gpu = make_backend({"cuda", 0, GetParam(), 0});
    const DType act = activation_dtype(GetParam());
    std::vector<Buffer> buffers;
    const TensorView dinp = random_tensor(*gpu, buffers, act, {rows, C}, 1);
    const TensorView dweight = random_tensor(*gpu, buffers, DType::f32, {C}, 2);
    const TensorView dbias = random_tensor(*gpu, buffers, DType::f32, {C}, 3);
    const TensorView dout = random_tensor(*gpu, buffers, act, {rows, C}, 4);
    const TensorView inp = random_tensor(*gpu, buffers, act, {rows, C}, 5);
    const TensorView weight = random_tensor(*gpu, buffers, act, {C}, 6);
    const TensorView mean = random_tensor(*gpu, buffers, DType::f32, {rows}, 7);
    const TensorView rstd = random_tensor(*gpu, buffers, DType::f32, {rows}, 8);
    gpu->synchronize();
    cuda_sim::reset_counters();
    gpu->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd);
    gpu->synchronize();
    const cuda_sim::Counters counters = cuda_sim::counters();
    ASSERT_EQ(counters.shared_accesses.size(), 1u) << "the backward kernel, vectorized";
    const auto& [owner, counts] = *counters.shared_accesses.begin();
    EXPECT_EQ(counts.extra_wavefronts, 0u) << owner << ": " << counts.requests << " requests";
    EXPECT_EQ(counts.worst_phase, 1) << owner;
    std::printf("%s, rows = %d, C = %d: %llu requests, %llu extra wavefronts, up to %d a phase\n",
                owner.c_str(), rows, C, static_cast<unsigned long long>(counts.requests),
                static_cast<unsigned long long>(counts.extra_wavefronts), counts.worst_phase);
}

INSTANTIATE_TEST_SUITE_P(SimPrecisions, SimLayerNormBankConflicts,
                         ::testing::Values(Precision::fp32, Precision::bf16, Precision::fp16));

class SimFlashBankConflicts : public ::testing::TestWithParam<int> {};

TEST_P(SimFlashBankConflicts, EveryLdmatrixPhaseIsOneWavefront) {
    const int head_dim = GetParam(), B = 1, T = 150, H = 2, C = H * head_dim;
    const std::unique_ptr<Backend> gpu = make_backend({"cuda", 0, Precision::bf16, 0});
    const auto tensor = [&](std::vector<Buffer>& keep, DType dtype, std::initializer_list<int64_t> shape,
                            uint32_t seed) { return random_tensor(*gpu, keep, dtype, shape, seed); };
    std::vector<Buffer> buffers;
    const TensorView qkv = tensor(buffers, DType::bf16, {B, T, 3 * C}, 1);
    const TensorView out = tensor(buffers, DType::bf16, {B, T, C}, 2);
    const TensorView lse = tensor(buffers, DType::f32, {B, H, T}, 3);
    const TensorView dout = tensor(buffers, DType::bf16, {B, T, C}, 4);
    const TensorView dqkv = tensor(buffers, DType::bf16, {B, T, 3 * C}, 5);

    gpu->synchronize();
    cuda_sim::reset_counters();
    gpu->attention_forward(out, lse, qkv, multi_head_attention(H));
    gpu->synchronize();  // the simulator runs a stream's work when the host waits for it
    const cuda_sim::Counters forward = cuda_sim::counters();
    gpu->attention_backward(dqkv, dout, qkv, lse, multi_head_attention(H));
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
