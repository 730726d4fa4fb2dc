// kernels/cpu/vector_exp.h and vector_math.h against float64 exp: ulp error over a dense sweep of
// its range, through the array function (the clone this processor runs) and inline, and the
// behaviour stated outside the range.
#include "kernels/cpu/vector_exp.h"
#include "kernels/cpu/vector_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace mixgpt::cpu {
namespace {

// |got - want| in units of the last place of the float nearest `want`.
double ulp_error(float got, double want) {
    const auto nearest = static_cast<float>(want);
    const double ulp = std::nextafter(nearest, std::numeric_limits<float>::infinity()) - nearest;
    return std::fabs(static_cast<double>(got) - want) / ulp;
}

TEST(VectorMath, ExpWithinTwoUlpOfFloat64ExpOverItsRange) {
    // Every 257th float pattern of [0, 88.72] and of [-86.9, -0] (about 8.6 million values, all
    // exponents, an odd stride through the mantissas), in an array loop as the kernels call it.
    std::vector<float> inputs;
    for (float end : {88.72f, -86.9f}) {
        const uint32_t sign = float_bits(end) & 0x80000000u;
        for (uint32_t bits = sign; bits <= float_bits(end); bits += 257) inputs.push_back(bits_float(bits));
    }
    std::vector<float> array_outputs = inputs;
    exp_shifted_array(array_outputs.data(), static_cast<int64_t>(array_outputs.size()), 0.f);
    std::vector<float> inline_outputs(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) inline_outputs[i] = exp_vectorizable(inputs[i]);
    for (const std::vector<float>* outputs : {&array_outputs, &inline_outputs}) {
        double worst = 0.0;
        float worst_at = 0.f;
        for (size_t i = 0; i < inputs.size(); ++i) {
            const double error = ulp_error((*outputs)[i], std::exp(static_cast<double>(inputs[i])));
            if (error > worst) worst = error, worst_at = inputs[i];
        }
        EXPECT_LE(worst, 2.0) << (outputs == &array_outputs ? "array" : "inline") << " at x = " << worst_at;
    }
    EXPECT_GT(inputs.size(), 1000000u);
}

TEST(VectorMath, ExpOverflowUnderflowAndNaNAsStated) {
    const float infinity = std::numeric_limits<float>::infinity();
    EXPECT_EQ(exp_vectorizable(88.73f), infinity);
    EXPECT_EQ(exp_vectorizable(1000.f), infinity);
    EXPECT_EQ(exp_vectorizable(infinity), infinity);
    EXPECT_TRUE(std::isfinite(exp_vectorizable(88.72f)));
    EXPECT_EQ(exp_vectorizable(-87.f), 0.f);
    EXPECT_EQ(exp_vectorizable(-1000.f), 0.f);
    EXPECT_EQ(exp_vectorizable(-infinity), 0.f);
    EXPECT_TRUE(std::isnan(exp_vectorizable(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(exp_vectorizable(0.f), 1.f);
}

}  // namespace
}  // namespace mixgpt::cpu
