// The simulator's cuBLASLt accumulates in fp32, as a GPU's GEMM does (tests/cuda_sim/
// cublaslt.cpp), so the fp32 and tf32 GPU tests meet a GPU-sized rounding error, not the error
// of a sum in double. Checked on dot products of K = 4096 positive terms (no cancellation, so
// the relative error is that of the summation): it must exceed what one final rounding gives
// (u = 2^-24, the error of a sum done exactly; 0.81 u with the former double sums, against 42 u
// for fp32 now, and for tf32 402 u in the H100's tensor-core model, whose steps of 8 products
// truncate toward zero, a bias that adds up along k: 11 u when each step rounded to nearest), and
// stay within the classical bound of recursive summation, (K - 1) u (Higham, "Accuracy and
// Stability of Numerical Algorithms", 2002, §4.2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace mixgpt {
namespace {

constexpr int64_t kRows = 4, kColumns = 4, kDepth = 4096;
constexpr double kUnitRoundoff = 0x1p-24;

class SimGemmRounding : public ::testing::TestWithParam<Precision> {};

TEST_P(SimGemmRounding, Fp32AccumulatorErrorLiesBetweenOneRoundingAndTheSummationBound) {
    const std::unique_ptr<Backend> gpu = make_backend({"cuda", 0, GetParam(), 0});
    // Multiples of 2^-10 in [0, 1): exact in tf32 as in fp32, so both precisions multiply the
    // same values.
    std::mt19937 generator(7);
    std::uniform_int_distribution<int> tenth_bits(1, 1023);
    std::vector<float> inp(kRows * kDepth), weight(kColumns * kDepth);
    for (float& value : inp) value = static_cast<float>(tenth_bits(generator)) * 0x1p-10f;
    for (float& value : weight) value = static_cast<float>(tenth_bits(generator)) * 0x1p-10f;

    TensorView inp_view(nullptr, DType::f32, {kRows, kDepth}),
        weight_view(nullptr, DType::f32, {kColumns, kDepth}),
        out_view(nullptr, DType::f32, {kRows, kColumns});
    const Buffer inp_buffer = gpu->allocate(inp_view.bytes()),
                 weight_buffer = gpu->allocate(weight_view.bytes()),
                 out_buffer = gpu->allocate(out_view.bytes());
    inp_view.data = inp_buffer.data();
    weight_view.data = weight_buffer.data();
    out_view.data = out_buffer.data();
    gpu->copy_to_backend(inp_view.data, inp.data(), inp_view.bytes());
    gpu->copy_to_backend(weight_view.data, weight.data(), weight_view.bytes());
    gpu->matmul_forward(out_view, TensorView(), inp_view, weight_view, TensorView(), MatmulEpilogue::none);
    std::vector<float> out(kRows * kColumns);
    gpu->copy_to_host(out.data(), out_view.data, out_view.bytes());

    double worst = 0;
    for (int64_t i = 0; i < kRows; ++i)
        for (int64_t j = 0; j < kColumns; ++j) {
            double exact = 0;  // every product and partial sum is exact in double (20 + 12 bits)
            for (int64_t l = 0; l < kDepth; ++l)
                exact += static_cast<double>(inp[i * kDepth + l]) * weight[j * kDepth + l];
            worst = std::max(worst, std::fabs(out[i * kColumns + j] - exact) / exact);
        }
    SCOPED_TRACE(std::string(precision_name(GetParam())) + ": worst relative error " + std::to_string(worst));
    EXPECT_GT(worst, kUnitRoundoff);
    EXPECT_LE(worst, (kDepth - 1) * kUnitRoundoff);
}

INSTANTIATE_TEST_SUITE_P(SimPrecisions, SimGemmRounding, ::testing::Values(Precision::fp32, Precision::tf32),
                         [](const auto& info) { return std::string(precision_name(info.param)); });

}  // namespace
}  // namespace mixgpt
