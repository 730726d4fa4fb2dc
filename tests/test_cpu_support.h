// Helpers of the CPU backend and model tests: tensors in host memory made from
// float64 values (rounded to their dtype), read back as float64, and the error
// bounds the tests judge by.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/tensor.h"
#include "tests/reference_f64.h"

namespace mixgpt::test {

// The FP32 criterion of issue 4 (also used against PyTorch): relative norm error of an fp32
// result against its float64 reference.
constexpr double kFp32Tolerance = 1e-5;

// A tensor in host memory (what the CPU backend works on).
class HostTensor {
public:
    HostTensor(DType dtype, std::initializer_list<int64_t> shape);  // zeros
    HostTensor(const std::vector<double>& values, DType dtype, std::initializer_list<int64_t> shape);
    TensorView view() const { return view_; }
    std::vector<double> values() const;

private:
    Buffer buffer_;
    TensorView view_;
};

// int32 values (tokens, targets) in host memory, viewed as DType::i32.
class IntTensor {
public:
    IntTensor(std::vector<int32_t> values, std::initializer_list<int64_t> shape);
    TensorView view() const { return view_; }
    const std::vector<int32_t>& values() const { return values_; }

private:
    std::vector<int32_t> values_;
    TensorView view_;
};

std::vector<double> random_normal(size_t count, uint32_t seed, double std = 1.0);
std::vector<int32_t> random_tokens(size_t count, int32_t vocabulary, uint32_t seed);
// The values a tensor of `dtype` holds after storing `values`.
std::vector<double> rounded(const std::vector<double>& values, DType dtype);
// The error storage in `dtype` alone puts on `reference`: the yardstick of the 2x rule.
double storage_error(const std::vector<double>& reference, DType dtype);
// The bound a result stored in `dtype` must meet against its float64 reference: the FP32
// criterion for fp32, else twice the storage error of the reference in that dtype.
double tolerance_for(const std::vector<double>& reference, DType dtype);
// tensor_statistics' result against the float64 reference's: the sum of squares within 1e-12
// relative (double sums in another order), the maximum and the counts exactly (EXPECTs).
void expect_statistics_match(const TensorStatistics& got, const F64Statistics& want, const std::string& what);

// The float64 references of attention (tests/reference_f64.h) for a backend whose activations are
// stored in `dtype`: under RoPE, q and k are rotated in float64 and then rounded to `dtype`, as the
// backends store the rotated values (kernels/ops.def); the backward treats that rounding as the
// identity. Without RoPE these are f64_attention_forward and f64_attention_backward.
// documents: f64_attention_forward's document numbers (empty: causal only).
F64AttentionForward stored_rope_attention_forward(const std::vector<double>& qkv, int B, int T, int head_dim,
                                                  const AttentionParams& params, DType dtype,
                                                  int first_position = 0,
                                                  const std::vector<int>& documents = {});
std::vector<double> stored_rope_attention_backward(const std::vector<double>& dout,
                                                   const std::vector<double>& qkv, int B, int T, int head_dim,
                                                   const AttentionParams& params, DType dtype,
                                                   const std::vector<int>& documents = {});

}  // namespace mixgpt::test
