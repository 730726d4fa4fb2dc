// The tensor-core model (kernels/tensor_core_model.h) on vectors that tell its features apart:
// each expected value is worked out by hand (here, and in bench/kernel_lab/tensor_core_vectors.h
// for the 16-bit inputs) from the feature values the model states (block size, extra alignment
// bits, the carry bit, truncation, the final rounding toward zero, FP8's 13-bit accumulator and
// its promotion), independently of the code. The lease's probe runs the 16-bit vectors on a GPU
// (bench/kernel_lab/tensor_core_probe.h), which settles the values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "bench/kernel_lab/tensor_core_vectors.h"
#include "kernels/tensor_core_model.h"

namespace mixgpt {
namespace {

constexpr int kA100 = 80, kH100 = 90;

// c + a · b over the vectors' length in `model` (b contiguous).
float dot(const TensorCoreModel& model, const std::vector<double>& a, const std::vector<double>& b, float c = 0.f) {
    return tensor_core_dot(model, a.data(), b.data(), 1, a.size(), c);
}

class TensorCoreModel16 : public ::testing::TestWithParam<TensorCoreInput> {};

TEST_P(TensorCoreModel16, DistinguishingVectors) {
    for (const lab::DistinguishingVector& v : lab::distinguishing_vectors()) {
        EXPECT_EQ(dot(tensor_core_model(kA100, GetParam()), v.a, v.b, v.c), v.a100) << v.feature << ", A100";
        EXPECT_EQ(dot(tensor_core_model(kH100, GetParam()), v.a, v.b, v.c), v.h100) << v.feature << ", H100";
        EXPECT_EQ(dot(exact_tensor_core_model(GetParam()), v.a, v.b, v.c), v.exact) << v.feature << ", exact";
    }
}

TEST_P(TensorCoreModel16, NanAndInfinityAsIeee) {
    const double inf = std::numeric_limits<double>::infinity();
    for (const TensorCoreModel& model : {tensor_core_model(kA100, GetParam()), tensor_core_model(kH100, GetParam())}) {
        EXPECT_TRUE(std::isnan(dot(model, {inf, 1.0}, {0.0, 1.0}))) << model.name << ": inf * 0";
        EXPECT_TRUE(std::isnan(dot(model, {inf, -inf}, {1.0, 1.0}))) << model.name << ": inf - inf";
        EXPECT_EQ(dot(model, {inf, 1.0}, {1.0, 1.0}), std::numeric_limits<float>::infinity()) << model.name;
        EXPECT_TRUE(std::isnan(dot(model, {1.0}, {1.0}, std::numeric_limits<float>::quiet_NaN()))) << model.name;
    }
}

INSTANTIATE_TEST_SUITE_P(Inputs, TensorCoreModel16, ::testing::Values(TensorCoreInput::bf16, TensorCoreInput::fp16),
                         [](const ::testing::TestParamInfo<TensorCoreInput>& info) {
                             return info.param == TensorCoreInput::bf16 ? std::string("bf16") : std::string("fp16");
                         });

// FP8 on the H100: 13 fraction bits. 1 + 2^-14 loses 2^-14 (1); 1 + 2^-13 keeps it. Exact sums
// keep both. 2^-7 is an e4m3 subnormal and an e5m2 normal.
TEST(TensorCoreModelFp8, ThirteenBitAccumulator) {
    for (const TensorCoreInput input : {TensorCoreInput::e4m3, TensorCoreInput::e5m2}) {
        const TensorCoreModel h100 = tensor_core_model(kH100, input), exact = exact_tensor_core_model(input);
        EXPECT_EQ(dot(h100, {1.0, 0x1p-7}, {1.0, 0x1p-7}), 1.f) << h100.name;
        EXPECT_EQ(dot(exact, {1.0, 0x1p-7}, {1.0, 0x1p-7}), 1.f + 0x1p-14f);
        EXPECT_EQ(dot(h100, {1.0, 0x1p-6}, {1.0, 0x1p-7}), 1.f + 0x1p-13f) << h100.name;
        // The sum itself is cut to 13 fraction bits: 1 + 1 + 2^-13 carries into 2, where they end
        // at 2^-12.
        EXPECT_EQ(dot(h100, {1.0, 1.0, 0x1p-6}, {1.0, 1.0, 0x1p-7}), 2.f) << h100.name;
        EXPECT_EQ(dot(exact, {1.0, 1.0, 0x1p-6}, {1.0, 1.0, 0x1p-7}), 2.f + 0x1p-13f);
        // 1.5 + 1.5 * 2^-13 = 1.5 + 2^-13 + 2^-14 on the grid of 2^-13: 1.5 + 2^-13.
        EXPECT_EQ(dot(h100, {1.5, 0x1.8p-6}, {1.0, 0x1p-7}), 1.5f + 0x1p-13f) << h100.name;
    }
}

// cuBLASLt adds the 13-bit sums into fp32 every 128 k elements: 1 at k = 0 and 2^-14 at k = 128
// fall in two promoted sums (1 + 2^-14 in fp32); in one chain 2^-14 would be cut away.
TEST(TensorCoreModelFp8, PromotionIntoFp32) {
    TensorCoreModel h100 = tensor_core_model(kH100, TensorCoreInput::e4m3);
    ASSERT_EQ(h100.promotion_interval, 128);
    const std::vector<double> a = lab::zeros_with(256, {{0, 1.0}, {128, 0x1p-7}});
    const std::vector<double> b = lab::zeros_with(256, {{0, 1.0}, {128, 0x1p-7}});
    EXPECT_EQ(dot(h100, a, b), 1.f + 0x1p-14f);
    h100.promotion_interval = 0;
    EXPECT_EQ(dot(h100, a, b), 1.f);
}

TEST(TensorCoreModelFp8, NoneBeforeHopper) {
    EXPECT_THROW(tensor_core_model(kA100, TensorCoreInput::e4m3), std::invalid_argument);
}

// TF32: 4 products a step on the A100, 8 on the H100, inputs truncated to 10 fraction bits.
TEST(TensorCoreModelTf32, StepsAndInputs) {
    EXPECT_EQ(tensor_core_model(kA100, TensorCoreInput::tf32).block, 4);
    EXPECT_EQ(tensor_core_model(kH100, TensorCoreInput::tf32).block, 8);
    EXPECT_EQ(truncate_to_tf32(1.f + 0x1p-10f + 0x1p-11f + 0x1p-23f), 1.f + 0x1p-10f);
    EXPECT_EQ(truncate_to_tf32(-1.f - 0x1p-11f), -1.f);
    EXPECT_TRUE(std::isnan(truncate_to_tf32(std::numeric_limits<float>::quiet_NaN())));
    // 1 - 1 then 2^-30 at k = 4: split from the first step on the A100 (kept), not on the H100.
    const std::vector<double> a = lab::zeros_with(8, {{0, 1.0}, {1, -1.0}, {4, 0x1p-15}});
    const std::vector<double> b = lab::zeros_with(8, {{0, 1.0}, {1, 1.0}, {4, 0x1p-15}});
    EXPECT_EQ(dot(tensor_core_model(kA100, TensorCoreInput::tf32), a, b), 0x1p-30f);
    EXPECT_EQ(dot(tensor_core_model(kH100, TensorCoreInput::tf32), a, b), 0.f);
}

// fp32 subnormal results: the sum is truncated on fp32's subnormal grid (2^-149).
TEST(TensorCoreModelRange, SubnormalAndOverflowingResults) {
    const TensorCoreModel h100 = tensor_core_model(kH100, TensorCoreInput::bf16);
    // 2^-70 * (2^-70 + 2^-77) = 2^-140 + 2^-147: both bits lie on the subnormal grid.
    EXPECT_EQ(dot(h100, {0x1p-70}, {0x1.02p-70}), 0x1p-140f + 0x1p-147f);
    // 2^-75 * (2^-75 * 1.0078125) = 2^-150 + 2^-157: below the grid's 2^-149, truncated to 0.
    EXPECT_EQ(dot(h100, {0x1p-75}, {0x1.02p-75}), 0.f);
    EXPECT_EQ(dot(h100, {0x1p100}, {0x1p100}), std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace mixgpt
