// The simulated cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b (tests/cuda_sim/device_primitives.h:
// convert_to_fp8x2, the name kernels/cuda/device_primitives.cuh gives the instruction on a GPU):
// "the value converted from input a is stored in the upper 8 bits of d and the value converted
// from input b is stored in the lower 8 bits of d" (PTX ISA, cvt), rounded to nearest even,
// saturated to the largest finite value, NaN to NaN. The expected codes are written out from the
// formats' fields (OCP OFP8: E4M3 bias 7, E5M2 bias 15), not computed by core/fp8.h. The FP8
// quantization kernel converts through this instruction, so tests/gpu/test_gpu_fp8_cast.cpp
// checks it over whole tensors against the CPU's conversion.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/cuda_sim/device_primitives.h"

namespace mixgpt {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInfinity = std::numeric_limits<float>::infinity();

TEST(SimFp8Instruction, E4m3x2PutsTheFirstSourceInTheHighByte) {
    using cuda::convert_to_fp8x2;
    // 1 = 0.0111.000, -2 = 1.1000.000
    EXPECT_EQ(convert_to_fp8x2<Fp8Format::e4m3>(1.f, -2.f), 0x38c0);
    EXPECT_EQ(convert_to_fp8x2<Fp8Format::e4m3>(-2.f, 1.f), 0xc038);
    // 1.0625 lies halfway between 1 (0.0111.000) and 1.125 (0.0111.001): the even mantissa, 1.
    EXPECT_EQ(convert_to_fp8x2<Fp8Format::e4m3>(0.f, 1.0625f), 0x0038);
    // Beyond 448 (0.1111.110) the largest finite value, signs kept; NaN the NaN 0.1111.111.
    EXPECT_EQ(convert_to_fp8x2<Fp8Format::e4m3>(1000.f, kNaN), 0x7e7f);
    EXPECT_EQ(convert_to_fp8x2<Fp8Format::e4m3>(-kInfinity, 0.f), 0xfe00);
}

TEST(SimFp8Instruction, E5m2x2PutsTheFirstSourceInTheHighByte) {
    using cuda::convert_to_fp8x2;
    // 1 = 0.01111.00, -2 = 1.10000.00
    EXPECT_EQ(convert_to_fp8x2<Fp8Format::e5m2>(1.f, -2.f), 0x3cc0);
    EXPECT_EQ(convert_to_fp8x2<Fp8Format::e5m2>(-2.f, 1.f), 0xc03c);
    // Beyond 57344 (0.11110.11) the largest finite value, not infinity; NaN the NaN 0.11111.11.
    EXPECT_EQ(convert_to_fp8x2<Fp8Format::e5m2>(kInfinity, kNaN), 0x7b7f);
    EXPECT_EQ(convert_to_fp8x2<Fp8Format::e5m2>(kNaN, -1e6f), 0x7ffb);
}

}  // namespace
}  // namespace mixgpt
