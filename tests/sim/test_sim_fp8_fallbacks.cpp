// The FP8 product (run_fp8_gemm, which every fp8_matmul_* op calls) when the simulated cuBLASLt
// offers no algorithm for it as asked (tests/cuda_sim/cublaslt_refusals.h): it takes a fallback
// route (kernels/cuda/cublaslt_fallback.h), says so once, and its result is judged as
// tests/gpu/test_gpu_fp8_gemm.cpp judges it (gpu_fp8_gemm_check.h), on the same cases:
//   - FP8 with a bias epilogue refused: fp32 output, the bias added by a kernel;
//   - FP8 into bf16 or fp16 refused: fp32 output, rounded by a kernel;
//   - FP8 into fp32 refused: operands widened to bf16 (exactly), the scales applied by the kernel;
//   - every FP8 product refused: the same, for every case;
//   - everything refused: one line naming the product's types and shape.
#ifdef MIXGPT_WITH_CUDA
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/cublaslt_matmul.h"
#include "tests/cuda_sim/cublaslt_refusals.h"
#include "tests/gpu/gpu_fp8_gemm_check.h"
#include "tests/test_support.h"

namespace mixgpt::gpu_test {
namespace {

constexpr const char* kFp32Output = "fp32 output with the epilogue in a kernel";
constexpr const char* kWidened = "operands widened to bf16";

struct Refused {
    const char* name;
    const char* rules;                      // MIXGPT_CUDA_SIM_CUBLASLT_REFUSE's syntax
    bool (*refuses)(const GemmCase& gemm);  // whether the case's product is refused as asked
    const char* route;                      // the route it then takes
};

const Refused kRefusals[] = {
    {"fp8_bias", "fp8,bias", [](const GemmCase& g) { return g.bias; }, kFp32Output},
    {"fp8_16bit_output", "fp8,d=bf16;fp8,d=f16", [](const GemmCase& g) { return g.out_dtype != DType::f32; },
     kFp32Output},
    {"fp8_fp32_output", "fp8,d=f32", [](const GemmCase& g) { return g.out_dtype == DType::f32; }, kWidened},
    {"fp8", "fp8", [](const GemmCase&) { return true; }, kWidened},
};

void PrintTo(const Refused& refused, std::ostream* out) { *out << refused.name; }

class SimFp8Fallbacks : public GpuFp8GemmCheck,
                        public ::testing::WithParamInterface<std::tuple<Refused, GemmCase>> {};

size_t count(const std::string& text, const std::string& part) {
    size_t found = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++found;
    return found;
}

TEST_P(SimFp8Fallbacks, MatchesTheCpuProductWithinTwiceItsError) {
    // Without FP8 tensor cores every FP8 product is refused and rerouted, which this test does not count.
    if (!gpu_test::gpu_runs_fp8()) GTEST_SKIP() << "the device has no FP8 tensor cores (compute capability below 8.9)";
    const Refused& refused = std::get<0>(GetParam());
    const GemmCase& gemm = std::get<1>(GetParam());
    const cuda_sim::CublasLtRefusal refusal(refused.rules);
    test::CapturedStderr captured;
    expect_gemm_matches_the_cpu(gemm);
    const std::string log = captured.take();
    const bool rerouted = refused.refuses(gemm);
    EXPECT_EQ(count(log, "cuda fp8 gemm: cuBLASLt offers no algorithm for "), rerouted ? 1u : 0u) << log;
    EXPECT_EQ(count(log, std::string("; computing it with ") + refused.route), rerouted ? 1u : 0u) << log;
}

INSTANTIATE_TEST_SUITE_P(SimRefusals, SimFp8Fallbacks,
                         ::testing::Combine(::testing::ValuesIn(kRefusals),
                                            ::testing::ValuesIn(fp8_gemm_cases())),
                         [](const auto& info) {
                             return std::string(std::get<0>(info.param).name) + "_" +
                                    std::get<1>(info.param).name;
                         });

class SimFp8NoAlgorithm : public GpuFp8Test {};

// With no algorithm on any route, one line names the product and the routes tried.
TEST_F(SimFp8NoAlgorithm, OnAnyRouteIsOneLineNamingTheProduct) {
    const cuda_sim::CublasLtRefusal refusal("all");
    const Buffer a = filled(24 * 96, 0x38), b = filled(40 * 96, 0x38), out = filled(24 * 40 * 2, 0),
                 bias = filled(40 * 2, 0);
    const Buffer scale = upload(std::vector<float>{1.f});
    cuda::LtMatmulRunner runner(*allocator, stream);
    cuda::Fp8Gemm gemm;
    gemm.a = a.as<uint8_t>();
    gemm.b = b.as<uint8_t>();
    gemm.b_format = Fp8Format::e5m2;
    gemm.a_scale_inverse = gemm.b_scale_inverse = scale.as<float>();
    gemm.out = out.data();
    gemm.bias = bias.data();
    gemm.M = 24;
    gemm.N = 40;
    gemm.K = 96;
    // cuBLASLt's A is the weight (our B), its m our N: out^T = B · A^T.
    EXPECT_EQ(test::error_of([&] { cuda::run_fp8_gemm(runner, gemm); }),
              "cuda fp8 gemm: cuBLASLt offers no algorithm for e5m2 x e4m3 -> bf16 with bias, m=40 n=24 k=96 "
              "(op TN, ld 96/96/40), nor with fp32 output with the epilogue in a kernel or with operands "
              "widened to bf16");
}

}  // namespace
}  // namespace mixgpt::gpu_test
#endif  // MIXGPT_WITH_CUDA
