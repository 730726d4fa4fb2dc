// The tensor-core probe (bench/kernel_lab/tensor_core_probe.h) on the simulator: bit-exact, since
// the simulator computes with the model the probe compares against (the lease's rehearsal shows
// the same lines), and able to fail: with the simulator summing exactly, the distinguishing
// vectors and random tiles disagree with the H100 model, and the failing inputs are written.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/kernel_lab/tensor_core_probe.h"
#include "core/cuda_check.h"
#include "tests/cuda_sim/tensor_cores.h"

namespace mixgpt {
namespace {

constexpr int kRandomTiles = 32;

std::vector<lab::ProbeLine> probe(const std::string& failures) {
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<lab::ProbeLine> lines = lab::run_tensor_core_probe(0, stream, kRandomTiles, 5, failures);
    CUDA_CHECK(cudaStreamDestroy(stream));
    return lines;
}

TEST(SimTensorCoreProbe, BitExactUnderTheDevicesModel) {
    const std::vector<lab::ProbeLine> lines = probe("");
    ASSERT_EQ(lines.size(), 5u);  // sm_90: mma bf16, mma fp16, cuBLASLt bf16, e4m3, e5m2
    EXPECT_EQ(lines[0].text, "tensor-core model h100 bf16 mma.sync: 43/43 tiles bit-exact");
    EXPECT_EQ(lines[1].text, "tensor-core model h100 fp16 mma.sync: 43/43 tiles bit-exact");
    EXPECT_EQ(lines[2].text, "tensor-core model h100 bf16 cuBLASLt: 4096/4096 outputs bit-exact");
    EXPECT_EQ(lines[3].text, "tensor-core model h100 e4m3 x e4m3 cuBLASLt: 4096/4096 outputs bit-exact");
    EXPECT_EQ(lines[4].text, "tensor-core model h100 e5m2 x e4m3 cuBLASLt: 4096/4096 outputs bit-exact");
    for (const lab::ProbeLine& line : lines) EXPECT_TRUE(line.exact) << line.text;
}

TEST(SimTensorCoreProbe, ExactSumsDisagreeAndTheirInputsAreKept) {
    const std::string failures = ::testing::TempDir() + "tensor_core_failures.txt";
    std::remove(failures.c_str());
    const bool previous = cuda_sim::set_exact_tensor_cores(true);
    const std::vector<lab::ProbeLine> lines = probe(failures);
    cuda_sim::set_exact_tensor_cores(previous);
    ASSERT_EQ(lines.size(), 5u);
    for (const lab::ProbeLine& line : lines) EXPECT_FALSE(line.exact) << line.text;
    std::ifstream file(failures);
    std::stringstream text;
    text << file.rdbuf();
    EXPECT_NE(text.str().find("h100 bf16 mma.sync tile 0: 1 of 128 differ; (0,0): gpu 0x1p+0 model 0x1.fffffep-1"),
              std::string::npos)
        << "the first distinguishing vector (1 - 2^-25) with its inputs";
    EXPECT_NE(text.str().find("h100 e4m3 x e4m3 cuBLASLt ("), std::string::npos);
}

}  // namespace
}  // namespace mixgpt
