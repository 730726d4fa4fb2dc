#include "tests/test_cpu_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace mixgpt::test {
namespace {

TensorView make_view(void* data, DType dtype, std::initializer_list<int64_t> shape) {
    return TensorView(data, dtype, shape);
}

size_t element_count(std::initializer_list<int64_t> shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
}

}  // namespace

HostTensor::HostTensor(DType dtype, std::initializer_list<int64_t> shape)
    : buffer_(Buffer::host(element_count(shape) * dtype_size(dtype))),
      view_(make_view(buffer_.data(), dtype, shape)) {}

HostTensor::HostTensor(const std::vector<double>& values, DType dtype, std::initializer_list<int64_t> shape)
    : HostTensor(dtype, shape) {
    MIXGPT_REQUIRE(values.size() == element_count(shape), "HostTensor: value count differs from the shape");
    const std::vector<float> narrow(values.begin(), values.end());
    convert_from_float(narrow.data(), buffer_.data(), dtype, narrow.size());
}

std::vector<double> HostTensor::values() const {
    std::vector<float> narrow(static_cast<size_t>(view_.numel()));
    convert_to_float(view_.data, view_.dtype, narrow.data(), narrow.size());
    return std::vector<double>(narrow.begin(), narrow.end());
}

IntTensor::IntTensor(std::vector<int32_t> values, std::initializer_list<int64_t> shape)
    : values_(std::move(values)), view_(values_.data(), DType::i32, shape) {
    MIXGPT_REQUIRE(values_.size() == element_count(shape), "IntTensor: value count differs from the shape");
}

std::vector<double> random_normal(size_t count, uint32_t seed, double std) {
    std::mt19937 generator(seed);
    std::normal_distribution<double> normal(0.0, std);
    std::vector<double> values(count);
    for (double& value : values) value = normal(generator);
    return values;
}

std::vector<int32_t> random_tokens(size_t count, int32_t vocabulary, uint32_t seed) {
    std::mt19937 generator(seed);
    std::uniform_int_distribution<int32_t> uniform(0, vocabulary - 1);
    std::vector<int32_t> tokens(count);
    for (int32_t& token : tokens) token = uniform(generator);
    return tokens;
}

std::vector<double> rounded(const std::vector<double>& values, DType dtype) {
    std::vector<double> out(values.size());
    for (size_t i = 0; i < values.size(); ++i) out[i] = round_to_dtype(static_cast<float>(values[i]), dtype);
    return out;
}

double storage_error(const std::vector<double>& reference, DType dtype) {
    return relative_norm_error(rounded(reference, dtype), reference);
}

double tolerance_for(const std::vector<double>& reference, DType dtype) {
    return dtype == DType::f32 ? kFp32Tolerance : 2.0 * storage_error(reference, dtype);
}

F64AttentionForward stored_rope_attention_forward(const std::vector<double>& qkv, int B, int T, int head_dim,
                                                  const AttentionParams& params, DType dtype,
                                                  int first_position, const std::vector<int>& documents) {
    if (params.rope_theta == 0.f) return f64_attention_forward(qkv, B, T, head_dim, params, 0, documents);
    AttentionParams unrotated = params;  // the window kept
    unrotated.rope_theta = 0.f;
    return f64_attention_forward(rounded(f64_rope(qkv, B, T, head_dim, params, first_position), dtype), B, T,
                                 head_dim, unrotated, 0, documents);
}

std::vector<double> stored_rope_attention_backward(const std::vector<double>& dout,
                                                   const std::vector<double>& qkv, int B, int T, int head_dim,
                                                   const AttentionParams& params, DType dtype,
                                                   const std::vector<int>& documents) {
    if (params.rope_theta == 0.f) return f64_attention_backward(dout, qkv, B, T, head_dim, params, documents);
    AttentionParams unrotated = params;  // the window kept
    unrotated.rope_theta = 0.f;
    const std::vector<double> stored = rounded(f64_rope(qkv, B, T, head_dim, params), dtype);
    return f64_rope(f64_attention_backward(dout, stored, B, T, head_dim, unrotated, documents), B, T,
                    head_dim, params, 0, true);
}

void expect_statistics_match(const TensorStatistics& got, const F64Statistics& want, const std::string& what) {
    EXPECT_LE(std::fabs(got.sum_squares - want.sum_squares), 1e-12 * want.sum_squares) << what;
    EXPECT_EQ(got.amax, want.amax) << what;
    EXPECT_EQ(got.small, want.small) << what;
    EXPECT_EQ(got.non_finite, want.non_finite) << what;
}

}  // namespace mixgpt::test
