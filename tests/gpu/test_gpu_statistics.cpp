// tensor_statistics (kernels/ops.def) on the CUDA backend: against the float64 reference in fp32,
// bf16 and fp16 as the CPU's (tests/test_cpu_statistics.cpp): sums of squares within 1e-12
// relative, the maximum and the counts exactly, specials included, an update, a tensor shorter
// than one block and one longer than the grid's fixed block count. exponent_histogram against
// frexp's exponents over every binade the dtype holds, specials included, counts added to.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinTensor;
using test::random_normal;

class GpuStatistics : public gpu_test::GpuPrecisionTest {
protected:
    TensorStatistics measure(const TwinTensor& x, const TensorView& reference, double small) const {
        Buffer memory = gpu->allocate(sizeof(TensorStatistics));
        gpu->tensor_statistics(memory.as<TensorStatistics>(), x.gpu(), reference, static_cast<float>(small));
        TensorStatistics statistics;
        gpu->copy_to_host(&statistics, memory.data(), sizeof statistics);
        return statistics;
    }
};


TEST_P(GpuStatistics, MatchTheFloat64Reference) {
    const DType dtype = act();
    const double small = dtype == DType::f16 ? std::ldexp(1.0, -14) : std::ldexp(1.0, -126);
    const double tiny = dtype == DType::f16 ? 3e-6 : 1e-39, infinity = std::numeric_limits<double>::infinity();
    for (const int64_t n : {int64_t{100}, int64_t{70001}}) {
        std::vector<double> values = random_normal(static_cast<size_t>(n), seed(1));
        const std::vector<double> specials = {0.0, tiny, -tiny, infinity, std::nan(""), -200.0};
        for (size_t i = 0; i < specials.size(); ++i) values[i * static_cast<size_t>(n / 7) + 3] = specials[i];
        const TwinTensor x = act_tensor(values, {n});
        const F64Statistics want = f64_tensor_statistics(x.cpu_values(), {}, small);
        EXPECT_EQ(want.non_finite, 2);
        test::expect_statistics_match(measure(x, TensorView(), small), want, "n = " + std::to_string(n));
    }
    const TwinTensor before = f32_tensor(random_normal(3000, seed(2)), {3000});
    std::vector<double> moved = before.cpu_values();
    for (size_t i = 0; i < moved.size(); i += 2) moved[i] += 1e-2;
    const TwinTensor after = f32_tensor(moved, {3000});
    test::expect_statistics_match(measure(after, before.gpu(), 1e-6),
                   f64_tensor_statistics(after.cpu_values(), before.cpu_values(), 1e-6), "update");
}

TEST_P(GpuStatistics, ExponentHistogramMatchesFrexp) {
    for (const int64_t n : {int64_t{100}, int64_t{70001}}) {
        std::vector<double> values = random_normal(static_cast<size_t>(n), seed(3));
        for (size_t i = 0; i < values.size(); i += 2)
            values[i] = std::ldexp(0.75, static_cast<int>((i * 37) % 278) - 149);
        const std::vector<double> specials = {0.0, -0.0, std::numeric_limits<double>::infinity(), std::nan("")};
        for (size_t i = 0; i < specials.size(); ++i) values[i * static_cast<size_t>(n / 5) + 1] = specials[i];
        const TwinTensor x = act_tensor(values, {n});
        const std::vector<uint64_t> want = f64_exponent_histogram(x.cpu_values());
        Buffer memory = gpu->allocate(kExponentBins * sizeof(uint64_t));
        gpu->fill_zero(memory.data(), memory.bytes());
        for (int pass = 1; pass <= 2; ++pass) {
            gpu->exponent_histogram(memory.as<uint64_t>(), x.gpu());
            std::vector<uint64_t> counts(kExponentBins);
            gpu->copy_to_host(counts.data(), memory.data(), memory.bytes());
            for (int bin = 0; bin < kExponentBins; ++bin)
                ASSERT_EQ(counts[static_cast<size_t>(bin)], pass * want[static_cast<size_t>(bin)])
                    << "n = " << n << ", pass " << pass << ", bin " << bin;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuStatistics,
                         ::testing::Values(Precision::fp32, Precision::bf16, Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
