// kernels/cpu/fp8_cast.h against an element-by-element loop: every code, the transposed copy, the
// amax and the saturation count, for each input dtype and format, with NaN, infinities and values
// past the format's range; the same results for any thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/fp8.h"
#include "kernels/cpu/fp8_cast.h"

namespace mixgpt::cpu {
namespace {

// Values around `scale`'s range: mostly normal, some past fp8_max / scale, NaN and infinities.
std::vector<float> test_values(size_t count, float range, uint32_t seed) {
    std::mt19937 random(seed);
    std::normal_distribution<float> normal(0.f, range / 4);
    std::vector<float> values(count);
    for (size_t i = 0; i < count; ++i) {
        const uint32_t kind = random() % 100;
        values[i] = kind == 0 ? NAN : kind == 1 ? -INFINITY : kind < 5 ? normal(random) * 16 : normal(random);
    }
    return values;
}

class CpuFp8Cast : public ::testing::TestWithParam<std::tuple<DType, Fp8Format>> {};

TEST_P(CpuFp8Cast, EqualsTheElementwiseConversionWithItsTransposeAndStats) {
    const auto [dtype, format] = GetParam();
    const int64_t batch = 3, rows_per_batch = 37, cols = 70, rows = batch * rows_per_batch;
    const float scale = fp8_max(format) / 8.f;
    const std::vector<float> values = test_values(static_cast<size_t>(rows * cols), 8.f, 9);
    std::vector<unsigned char> stored(values.size() * dtype_size(dtype));
    convert_from_float(values.data(), stored.data(), dtype, values.size());
    std::vector<float> held(values.size());  // what the tensor holds
    convert_to_float(stored.data(), dtype, held.data(), held.size());

    std::vector<uint8_t> codes(values.size()), transposed(values.size());
    const Fp8QuantizeStats stats =
        quantize_fp8(TensorView(stored.data(), dtype, {batch, rows_per_batch, cols}), scale, format,
                     codes.data(), transposed.data());
    float amax = 0.f;
    uint64_t saturated = 0;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            const float x = held[static_cast<size_t>(r * cols + c)];
            const uint8_t want = float_to_fp8_bits(x * scale, format);
            ASSERT_EQ(codes[static_cast<size_t>(r * cols + c)], want) << r << "," << c;
            ASSERT_EQ(transposed[static_cast<size_t>(c * rows + r)], want) << r << "," << c;
            if (!std::isnan(x)) amax = std::max(amax, std::fabs(x));
            saturated += std::fabs(x * scale) > fp8_max(format);
        }
    EXPECT_EQ(stats.amax, amax);
    EXPECT_EQ(stats.saturated, saturated);
    EXPECT_GT(saturated, 0u);
}

TEST_P(CpuFp8Cast, SameResultsForAnyThreadCount) {
    const auto [dtype, format] = GetParam();
    const int64_t rows = 300, cols = 129;
    const std::vector<float> values = test_values(static_cast<size_t>(rows * cols), 100.f, 4);
    std::vector<unsigned char> stored(values.size() * dtype_size(dtype));
    convert_from_float(values.data(), stored.data(), dtype, values.size());
    const TensorView in(stored.data(), dtype, {rows, cols});
    std::vector<uint8_t> one(values.size()), one_t(values.size()), three(values.size()),
        three_t(values.size());
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const Fp8QuantizeStats a = quantize_fp8(in, 2.f, format, one.data(), one_t.data());
    omp_set_num_threads(3);
    const Fp8QuantizeStats b = quantize_fp8(in, 2.f, format, three.data(), three_t.data());
    omp_set_num_threads(threads);
    EXPECT_EQ(one, three);
    EXPECT_EQ(one_t, three_t);
    EXPECT_EQ(a.amax, b.amax);
    EXPECT_EQ(a.saturated, b.saturated);
}

TEST(CpuFp8CastChecks, RefusesIndexTensorsAndMissingOutputs) {
    std::vector<int32_t> indices(4);
    std::vector<float> values(4);
    std::vector<uint8_t> codes(4);
    EXPECT_THROW(quantize_fp8(TensorView(indices.data(), DType::i32, {4}), 1.f, Fp8Format::e4m3, codes.data(),
                              nullptr),
                 Error);
    EXPECT_THROW(
        quantize_fp8(TensorView(values.data(), DType::f32, {4}), 1.f, Fp8Format::e4m3, nullptr, nullptr),
        Error);
    EXPECT_NO_THROW(quantize_fp8(TensorView(values.data(), DType::f32, {4}), 1.f, Fp8Format::e4m3,
                                 codes.data(), nullptr));
}

INSTANTIATE_TEST_SUITE_P(DtypesAndFormats, CpuFp8Cast,
                         ::testing::Combine(::testing::Values(DType::f32, DType::bf16, DType::f16),
                                            ::testing::Values(Fp8Format::e4m3, Fp8Format::e5m2)),
                         [](const ::testing::TestParamInfo<std::tuple<DType, Fp8Format>>& info) {
                             return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                    fp8_format_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace mixgpt::cpu
