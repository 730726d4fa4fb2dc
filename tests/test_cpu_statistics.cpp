// tensor_statistics (kernels/ops.def) on the CPU backend against the float64 reference
// (tests/reference_f64.h) in fp32, bf16 and fp16: sums of squares within 1e-12 relative (double
// sums in another order), the maximum and the counts of small and non-finite elements exactly;
// zeros, subnormals, infinities and NaNs placed among normal values; an update (x - reference);
// an empty tensor; the same bits on 1 and 4 threads. exponent_histogram against frexp's exponents
// over every binade of each dtype, specials included, counts added to.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using test::HostTensor;

// 70000 values (past one chunk of 65536) of spread magnitudes, with specials at fixed places.
std::vector<double> spread_values(DType dtype) {
    std::vector<double> values = test::random_normal(70000, 5, 3.0);
    const double tiny = dtype == DType::f16 ? 3e-6 : 1e-39;  // a subnormal of the dtype
    const double infinity = std::numeric_limits<double>::infinity();
    const std::vector<double> specials = {0.0, -0.0, tiny, -tiny, infinity, -infinity, std::nan(""), 1000.0};
    for (size_t i = 0; i < specials.size(); ++i) values[i * 9001 + 17] = specials[i];
    return values;
}

double smallest_normal(DType dtype) { return dtype == DType::f16 ? std::ldexp(1.0, -14) : std::ldexp(1.0, -126); }

TensorStatistics measure(Backend& backend, const HostTensor& x, const TensorView& reference, double small) {
    TensorStatistics statistics;
    backend.tensor_statistics(&statistics, x.view(), reference, static_cast<float>(small));
    return statistics;
}


TEST(CpuStatistics, MatchTheFloat64ReferenceInEveryDtype) {
    auto backend = make_backend({"cpu", 0, Precision::fp32, 2});
    for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
        const HostTensor x(spread_values(dtype), dtype, {70000});
        const std::vector<double> rounded = x.values();
        const F64Statistics want = f64_tensor_statistics(rounded, {}, smallest_normal(dtype));
        EXPECT_EQ(want.non_finite, 3);
        EXPECT_GE(want.small, 4) << "two zeros and two subnormals at least";
        test::expect_statistics_match(measure(*backend, x, TensorView(), smallest_normal(dtype)), want, dtype_name(dtype));
    }
}

TEST(CpuStatistics, AnUpdateIsTheDifferenceToTheReference) {
    auto backend = make_backend({"cpu", 0, Precision::fp32, 2});
    const HostTensor before(test::random_normal(1000, 7), DType::f32, {1000});
    std::vector<double> moved = before.values();
    for (size_t i = 0; i < moved.size(); i += 3) moved[i] += 1e-3 * static_cast<double>(i % 7);
    const HostTensor after(moved, DType::f32, {1000});
    const F64Statistics want = f64_tensor_statistics(after.values(), before.values(), 1e-6);
    EXPECT_GT(want.small, 0) << "the elements that did not move";
    test::expect_statistics_match(measure(*backend, after, before.view(), 1e-6), want, "update");
}

TEST(CpuStatistics, EmptyTensorAndThreadCounts) {
    auto one = make_backend({"cpu", 0, Precision::fp32, 1});
    auto four = make_backend({"cpu", 0, Precision::fp32, 4});
    const HostTensor empty(std::vector<double>(), DType::f32, {0});
    const TensorStatistics none = measure(*one, empty, TensorView(), 1.0);
    EXPECT_EQ(none.sum_squares + none.amax + none.small + none.non_finite, 0.0);
    const HostTensor x(spread_values(DType::f32), DType::f32, {70000});
    const TensorStatistics a = measure(*one, x, TensorView(), 1e-3), b = measure(*four, x, TensorView(), 1e-3);
    EXPECT_EQ(a.sum_squares, b.sum_squares);
    EXPECT_EQ(a.small, b.small);
}

// 70000 values over every binade from 2^-149 to 2^127 (each dtype keeps what it can, the rest
// becomes zero or Inf), with the specials of spread_values.
std::vector<double> binade_values(DType dtype) {
    std::vector<double> values = spread_values(dtype);
    for (size_t i = 0; i < values.size(); ++i)
        if (i % 3 == 0 && (i < 17 || (i - 17) % 9001 != 0)) values[i] = std::ldexp(0.5 + 0.5 * std::fabs(std::sin(static_cast<double>(i))),
                                               static_cast<int>((i * 37) % 278) - 149);
    return values;
}

TEST(CpuExponentHistogram, MatchesFrexpInEveryDtypeAndAddsUp) {
    auto backend = make_backend({"cpu", 0, Precision::fp32, 2});
    for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
        const HostTensor x(binade_values(dtype), dtype, {70000});
        const std::vector<uint64_t> want = f64_exponent_histogram(x.values());
        EXPECT_GE(want[1], dtype == DType::f32 ? 1u : 0u) << "2^-149, fp32's smallest subnormal";
        EXPECT_GE(want[kExponentBins - 1], 3u) << "Inf, -Inf and NaN";
        std::vector<uint64_t> counts(kExponentBins, 0);
        backend->exponent_histogram(counts.data(), x.view());
        EXPECT_EQ(counts, want) << dtype_name(dtype);
        backend->exponent_histogram(counts.data(), x.view());
        for (int bin = 0; bin < kExponentBins; ++bin)
            ASSERT_EQ(counts[static_cast<size_t>(bin)], 2 * want[static_cast<size_t>(bin)]) << "bin " << bin;
    }
    std::vector<uint64_t> none(kExponentBins, 0);
    backend->exponent_histogram(none.data(), HostTensor(std::vector<double>(), DType::f32, {0}).view());
    EXPECT_EQ(none, std::vector<uint64_t>(kExponentBins, 0));
}

}  // namespace
}  // namespace mixgpt
