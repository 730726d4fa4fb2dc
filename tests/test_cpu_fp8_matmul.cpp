// kernels/cpu/fp8_matmul.h: bit for bit against a naive loop that follows the documented order of
// operations (decode, sum over k in order in fp32, scale, accumulate, bias, round), for every type
// combination cuBLASLt allows, with ragged shapes; the same bits for any thread count; within the
// fp32 summation bound of the exact (float64) product; and the combinations cuBLASLt refuses.
#include <gtest/gtest.h>
#include <omp.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/fp8.h"
#include "kernels/cpu/fp8_matmul.h"
#include "tests/fp8_test_support.h"

namespace mixgpt::cpu {
namespace {

// out as stored, one element per bit pattern (uint16 for bf16/fp16, uint32 for fp32).
std::vector<uint32_t> stored_bits(const std::vector<unsigned char>& bytes, DType dtype) {
    const size_t size = dtype_size(dtype), count = bytes.size() / size;
    std::vector<uint32_t> bits(count, 0);
    for (size_t i = 0; i < count; ++i) std::memcpy(&bits[i], &bytes[i * size], size);
    return bits;
}

struct Problem {
    int64_t M, N, K;
    Fp8Format a_format, b_format;
    DType out_dtype;
    bool with_bias, accumulate;
};

struct Operands {
    std::vector<uint8_t> a_codes, b_codes;
    Fp8Matrix a, b;
    std::vector<unsigned char> bias, initial_out;
};

Operands make_operands(const Problem& p, uint32_t seed) {
    Operands o;
    o.a_codes = test::random_fp8_codes(static_cast<size_t>(p.M * p.K), p.a_format, seed);
    o.b_codes = test::random_fp8_codes(static_cast<size_t>(p.N * p.K), p.b_format, seed + 1);
    o.a = {o.a_codes.data(), p.M, p.K, p.a_format, 0.37f};
    o.b = {o.b_codes.data(), p.N, p.K, p.b_format, 1.f / 3.f};
    std::mt19937 random(seed + 2);
    std::normal_distribution<float> normal(0.f, 100.f);
    const DType bias_dtype = p.out_dtype == DType::f16 ? DType::f16 : DType::bf16;
    std::vector<float> bias(static_cast<size_t>(p.N)), initial(static_cast<size_t>(p.M * p.N));
    for (float& value : bias) value = normal(random);
    for (float& value : initial) value = normal(random);
    o.bias.resize(bias.size() * dtype_size(bias_dtype));
    convert_from_float(bias.data(), o.bias.data(), bias_dtype, bias.size());
    o.initial_out.resize(initial.size() * dtype_size(p.out_dtype));
    convert_from_float(initial.data(), o.initial_out.data(), p.out_dtype, initial.size());
    return o;
}

std::vector<unsigned char> run_fp8_matmul(const Problem& p, const Operands& o) {
    std::vector<unsigned char> out = o.initial_out;
    const DType bias_dtype = p.out_dtype == DType::f16 ? DType::f16 : DType::bf16;
    TensorView bias;
    if (p.with_bias) bias = TensorView(const_cast<unsigned char*>(o.bias.data()), bias_dtype, {p.N});
    fp8_matmul(TensorView(out.data(), p.out_dtype, {p.M, p.N}), o.a, o.b, bias, p.accumulate);
    return out;
}

// The documented order, one element at a time.
std::vector<unsigned char> naive_fp8_matmul(const Problem& p, const Operands& o) {
    std::vector<unsigned char> out = o.initial_out;
    const DType bias_dtype = p.out_dtype == DType::f16 ? DType::f16 : DType::bf16;
    const size_t out_size = dtype_size(p.out_dtype);
    const float scale = o.a.scale_inverse * o.b.scale_inverse;
    for (int64_t m = 0; m < p.M; ++m)
        for (int64_t n = 0; n < p.N; ++n) {
            float acc = 0.f;
            for (int64_t k = 0; k < p.K; ++k)
                acc = acc + fp8_bits_to_float(o.a_codes[m * p.K + k], p.a_format) *
                                fp8_bits_to_float(o.b_codes[n * p.K + k], p.b_format);
            float value = acc * scale;
            unsigned char* element = &out[static_cast<size_t>(m * p.N + n) * out_size];
            if (p.accumulate) {
                float current;
                convert_to_float(element, p.out_dtype, &current, 1);
                value = current + value;
            }
            if (p.with_bias) {
                float bias;
                convert_to_float(&o.bias[static_cast<size_t>(n) * dtype_size(bias_dtype)], bias_dtype, &bias,
                                 1);
                value = value + bias;
            }
            convert_from_float(&value, element, p.out_dtype, 1);
        }
    return out;
}

void expect_same_bits(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want,
                      DType dtype, const char* what) {
    const std::vector<uint32_t> got_bits = stored_bits(got, dtype), want_bits = stored_bits(want, dtype);
    ASSERT_EQ(got_bits.size(), want_bits.size());
    size_t differing = 0, first = 0;
    for (size_t i = 0; i < got_bits.size(); ++i)
        if (got_bits[i] != want_bits[i] && differing++ == 0) first = i;
    EXPECT_EQ(differing, 0u) << what << ": " << differing << " elements differ, first " << first << " (0x"
                             << std::hex << got_bits[first] << " vs 0x" << want_bits[first] << ")";
}

class CpuFp8Matmul : public ::testing::TestWithParam<std::tuple<Fp8Format, Fp8Format, DType>> {
protected:
    Problem problem(int64_t M, int64_t N, int64_t K, bool bias, bool accumulate) const {
        return {M,    N,         K, std::get<0>(GetParam()), std::get<1>(GetParam()), std::get<2>(GetParam()),
                bias, accumulate};
    }
};

TEST_P(CpuFp8Matmul, EqualsTheNaiveOrderBitForBit) {
    uint32_t seed = 11;
    for (const auto& shape :
         std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {13, 37, 29}, {50, 17, 96}, {7, 64, 1}})
        for (const bool bias : {false, true})
            for (const bool accumulate : {false, true}) {
                const Problem p = problem(shape[0], shape[1], shape[2], bias, accumulate);
                const Operands o = make_operands(p, seed += 3);
                SCOPED_TRACE(testing::Message() << "M " << p.M << " N " << p.N << " K " << p.K << " bias "
                                                << bias << " accumulate " << accumulate);
                expect_same_bits(run_fp8_matmul(p, o), naive_fp8_matmul(p, o), p.out_dtype, "fp8_matmul");
            }
}

TEST_P(CpuFp8Matmul, SameBitsForAnyThreadCount) {
    const Problem p = problem(101, 75, 130, true, true);
    const Operands o = make_operands(p, 5);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const std::vector<unsigned char> one = run_fp8_matmul(p, o);
    omp_set_num_threads(3);
    const std::vector<unsigned char> three = run_fp8_matmul(p, o);
    omp_set_num_threads(threads);
    expect_same_bits(three, one, p.out_dtype, "3 threads against 1");
}

std::string combination_name(const ::testing::TestParamInfo<std::tuple<Fp8Format, Fp8Format, DType>>& info) {
    return std::string(fp8_format_name(std::get<0>(info.param))) + "_" +
           fp8_format_name(std::get<1>(info.param)) + "_" + dtype_name(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Combinations, CpuFp8Matmul,
                         ::testing::Values(std::make_tuple(Fp8Format::e4m3, Fp8Format::e4m3, DType::bf16),
                                           std::make_tuple(Fp8Format::e4m3, Fp8Format::e4m3, DType::f16),
                                           std::make_tuple(Fp8Format::e4m3, Fp8Format::e4m3, DType::f32),
                                           std::make_tuple(Fp8Format::e4m3, Fp8Format::e5m2, DType::bf16),
                                           std::make_tuple(Fp8Format::e5m2, Fp8Format::e4m3, DType::bf16),
                                           std::make_tuple(Fp8Format::e5m2, Fp8Format::e4m3, DType::f32)),
                         combination_name);

// The fp32 sums stay within the standard bound of a recursive summation of exact products:
// |acc - exact| <= gamma_(K-1) sum |a b| < K u sum |a b|, u = 2^-24, exact computed in float64 (exact here:
// every product is a multiple of 2^-18 below 2^18, so K of them sum exactly in 53 bits).
TEST(CpuFp8MatmulAccuracy, Fp32SumsStayWithinTheSummationBoundOfTheExactProduct) {
    const int64_t M = 4, N = 5, K = 4096;
    const std::vector<uint8_t> a = test::random_fp8_codes(static_cast<size_t>(M * K), Fp8Format::e4m3, 3);
    const std::vector<uint8_t> b = test::random_fp8_codes(static_cast<size_t>(N * K), Fp8Format::e4m3, 4);
    std::vector<float> out(static_cast<size_t>(M * N));
    fp8_matmul(TensorView(out.data(), DType::f32, {M, N}), {a.data(), M, K, Fp8Format::e4m3, 1.f},
               {b.data(), N, K, Fp8Format::e4m3, 1.f}, TensorView(), false);
    int inexact = 0;
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double exact = 0, magnitude = 0;
            for (int64_t k = 0; k < K; ++k) {
                const double product =
                    static_cast<double>(e4m3_bits_to_float(a[m * K + k])) * e4m3_bits_to_float(b[n * K + k]);
                exact += product;
                magnitude += std::fabs(product);
            }
            const double got = out[static_cast<size_t>(m * N + n)];
            EXPECT_LE(std::fabs(got - exact), K * std::ldexp(1.0, -24) * magnitude) << m << "," << n;
            inexact += got != exact;
        }
    EXPECT_GT(inexact, 0);  // the sums do round: the bound is tested, not trivially met
}

TEST(CpuFp8MatmulChecks, RefusesWhatCublasLtRefuses) {
    std::vector<uint8_t> codes(64, 0x38);
    std::vector<uint16_t> out(16), bias(4);
    std::vector<float> out32(16);
    const Fp8Matrix e4m3{codes.data(), 4, 4, Fp8Format::e4m3, 1.f};
    const Fp8Matrix e5m2{codes.data(), 4, 4, Fp8Format::e5m2, 1.f};
    const TensorView bf16_out(out.data(), DType::bf16, {4, 4});
    EXPECT_NO_THROW(fp8_matmul(bf16_out, e4m3, e5m2, TensorView(bias.data(), DType::bf16, {4}), false));
    EXPECT_THROW(fp8_matmul(bf16_out, e5m2, e5m2, TensorView(), false), Error);
    EXPECT_THROW(fp8_matmul(bf16_out, e4m3, {codes.data(), 4, 8, Fp8Format::e4m3, 1.f}, TensorView(), false),
                 Error);
    EXPECT_THROW(fp8_matmul(bf16_out, e4m3, e4m3, TensorView(bias.data(), DType::f16, {4}), false), Error);
    EXPECT_THROW(fp8_matmul(TensorView(out32.data(), DType::f32, {4, 4}), e4m3, e4m3,
                            TensorView(out32.data(), DType::f32, {4}), false),
                 Error);
    EXPECT_THROW(fp8_matmul(TensorView(out.data(), DType::bf16, {4, 3}), e4m3, e4m3, TensorView(), false),
                 Error);
}

}  // namespace
}  // namespace mixgpt::cpu
