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
#include "tests/cuda_sim/device_limits.h"
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

// sm_90: the H100 model, and FP8 products; sm_80 (MIXGPT_CUDA_SIM_ARCH=80): the A100's, no FP8.
bool hopper() { return cuda_sim::device_limits().major >= 9; }

TEST(SimTensorCoreProbe, BitExactUnderTheDevicesModel) {
    const std::vector<lab::ProbeLine> lines = probe("");
    const std::string device = hopper() ? "h100" : "a100";
    std::vector<std::string> expected = {
        "tensor-core model " + device + " bf16 mma.sync: 43/43 tiles bit-exact",
        "tensor-core model " + device + " fp16 mma.sync: 43/43 tiles bit-exact",
        "tensor-core model " + device + " bf16 cuBLASLt: 4096/4096 outputs bit-exact"};
    if (hopper()) {
        expected.push_back("tensor-core model h100 e4m3 x e4m3 cuBLASLt: 4096/4096 outputs bit-exact");
        expected.push_back("tensor-core model h100 e5m2 x e4m3 cuBLASLt: 4096/4096 outputs bit-exact");
    }
    ASSERT_EQ(lines.size(), expected.size());
    for (size_t i = 0; i < lines.size(); ++i) {
        EXPECT_EQ(lines[i].text, expected[i]);
        EXPECT_TRUE(lines[i].exact) << lines[i].text;
    }
}

TEST(SimTensorCoreProbe, ExactSumsDisagreeAndTheirInputsAreKept) {
    const std::string failures = ::testing::TempDir() + "tensor_core_failures.txt";
    std::remove(failures.c_str());
    const bool previous = cuda_sim::set_exact_tensor_cores(true);
    const std::vector<lab::ProbeLine> lines = probe(failures);
    cuda_sim::set_exact_tensor_cores(previous);
    ASSERT_EQ(lines.size(), hopper() ? 5u : 3u);
    for (const lab::ProbeLine& line : lines) EXPECT_FALSE(line.exact) << line.text;
    std::ifstream file(failures);
    std::stringstream text;
    text << file.rdbuf();
    // The A100's model cuts 1 - 2^-25 to 1 as exact sums do: its first tile agrees, the fifth differs.
    EXPECT_NE(text.str().find(hopper() ? "h100 bf16 mma.sync tile 0: 1 of 128 differ; (0,0): gpu 0x1p+0 model 0x1.fffffep-1"
                                       : "a100 bf16 mma.sync tile 4: 1 of 128 differ; (0,0): gpu 0x1.000004p+0 model 0x1.000002p+0"),
              std::string::npos)
        << "a distinguishing vector with its inputs";
    if (hopper()) {
        EXPECT_NE(text.str().find("h100 e4m3 x e4m3 cuBLASLt ("), std::string::npos);
    }
}

}  // namespace
}  // namespace mixgpt
