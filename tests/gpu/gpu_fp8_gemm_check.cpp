#ifdef MIXGPT_WITH_CUDA
#include "tests/gpu/gpu_fp8_gemm_check.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "kernels/cpu/fp8_matmul.h"
#include "kernels/cuda/cublaslt_matmul.h"
#include "kernels/tensor_core_model.h"
#include "tests/fp8_test_support.h"

namespace mixgpt::gpu_test {
namespace {

constexpr double kFp32Tolerance = 1e-5;

double relative_error(const std::vector<double>& values, const std::vector<double>& reference) {
    double difference = 0, norm = 0;
    for (size_t i = 0; i < values.size(); ++i) {
        difference += (values[i] - reference[i]) * (values[i] - reference[i]);
        norm += reference[i] * reference[i];
    }
    return std::sqrt(difference / norm);
}

}  // namespace

const std::vector<GemmCase>& fp8_gemm_cases() {
    static const std::vector<GemmCase> cases = {
        {"e4m3_e4m3_bf16_bias", Fp8Format::e4m3, Fp8Format::e4m3, DType::bf16, true, false, 24, 40, 96},
        {"e4m3_e4m3_fp16", Fp8Format::e4m3, Fp8Format::e4m3, DType::f16, false, false, 7, 16, 32},
        {"e5m2_e4m3_bf16_accumulate", Fp8Format::e5m2, Fp8Format::e4m3, DType::bf16, false, true, 33, 24, 64},
        {"e4m3_e5m2_fp32_accumulate_bias", Fp8Format::e4m3, Fp8Format::e5m2, DType::f32, true, true, 16, 20,
         48}};
    return cases;
}

std::vector<double> as_doubles(const std::vector<unsigned char>& bytes, DType dtype) {
    std::vector<float> values(bytes.size() / dtype_size(dtype));
    convert_to_float(bytes.data(), dtype, values.data(), values.size());
    return {values.begin(), values.end()};
}

void expect_within_twice_the_cpus_error(const std::vector<double>& gpu, const std::vector<double>& cpu,
                                        const std::vector<double>& reference, DType out_dtype,
                                        const std::vector<double>& modelled) {
    const double gpu_error = relative_error(gpu, reference);
    const double cpu_error =
        std::max(relative_error(cpu, reference), modelled.empty() ? 0.0 : relative_error(modelled, reference));
    const double bound = std::max(2 * cpu_error, out_dtype == DType::f32 ? kFp32Tolerance : 0.0);
    record_error_ratio(std::string("fp8 gemm ") + dtype_name(out_dtype), gpu_error, cpu_error, bound);
    EXPECT_LE(gpu_error, bound) << "GPU error " << gpu_error << ", CPU error " << cpu_error;
}

void GpuFp8GemmCheck::expect_gemm_matches_the_cpu(const GemmCase& c) {
    const uint32_t seed = run_seed();
    const std::vector<uint8_t> a = test::random_fp8_codes(static_cast<size_t>(c.M * c.K), c.a_format, seed);
    const std::vector<uint8_t> b =
        test::random_fp8_codes(static_cast<size_t>(c.N * c.K), c.b_format, seed + 1);
    const float a_scale_inverse = 0.01f, b_scale_inverse = 0.3f;
    const DType bias_dtype = c.out_dtype == DType::f16 ? DType::f16 : DType::bf16;
    std::mt19937 random(seed + 2);
    std::normal_distribution<float> normal(0.f, 500.f);
    std::vector<float> bias_values(static_cast<size_t>(c.N)), initial(static_cast<size_t>(c.M * c.N));
    for (float& value : bias_values) value = normal(random);
    for (float& value : initial) value = normal(random);
    std::vector<unsigned char> bias(bias_values.size() * dtype_size(bias_dtype));
    convert_from_float(bias_values.data(), bias.data(), bias_dtype, bias_values.size());
    std::vector<unsigned char> cpu_out(initial.size() * dtype_size(c.out_dtype));
    convert_from_float(initial.data(), cpu_out.data(), c.out_dtype, initial.size());
    const std::vector<double> stored_initial = as_doubles(cpu_out, c.out_dtype);
    const std::vector<double> stored_bias = as_doubles(bias, bias_dtype);

    // float64 reference on the same FP8 values.
    std::vector<double> reference(initial.size());
    for (int64_t m = 0; m < c.M; ++m)
        for (int64_t n = 0; n < c.N; ++n) {
            double sum = 0;
            for (int64_t k = 0; k < c.K; ++k)
                sum += static_cast<double>(fp8_bits_to_float(a[m * c.K + k], c.a_format)) *
                       fp8_bits_to_float(b[n * c.K + k], c.b_format);
            double value = sum * a_scale_inverse * b_scale_inverse;
            if (c.accumulate) value += stored_initial[static_cast<size_t>(m * c.N + n)];
            if (c.bias) value += stored_bias[static_cast<size_t>(n)];
            reference[static_cast<size_t>(m * c.N + n)] = value;
        }

    // The H100's FP8 tensor cores on the same codes: each output's dot product in their arithmetic,
    // then cuBLASLt's fp32 epilogue (scales, C, bias), rounded to the output type.
    const TensorCoreModel model =
        tensor_core_model(90, c.a_format == Fp8Format::e4m3 ? TensorCoreInput::e4m3 : TensorCoreInput::e5m2);
    std::vector<double> modelled(initial.size()), row(static_cast<size_t>(c.K)), column(row.size());
    for (int64_t m = 0; m < c.M; ++m) {
        for (int64_t k = 0; k < c.K; ++k) row[k] = fp8_bits_to_float(a[m * c.K + k], c.a_format);
        for (int64_t n = 0; n < c.N; ++n) {
            for (int64_t k = 0; k < c.K; ++k) column[k] = fp8_bits_to_float(b[n * c.K + k], c.b_format);
            float value = (a_scale_inverse * b_scale_inverse) *
                          tensor_core_dot(model, row.data(), column.data(), 1, static_cast<uint64_t>(c.K), 0.f);
            if (c.accumulate) value += static_cast<float>(stored_initial[static_cast<size_t>(m * c.N + n)]);
            if (c.bias) value += static_cast<float>(stored_bias[static_cast<size_t>(n)]);
            modelled[static_cast<size_t>(m * c.N + n)] = round_to_dtype(value, c.out_dtype);
        }
    }

    const Buffer gpu_out = upload(cpu_out);
    cpu::fp8_matmul(TensorView(cpu_out.data(), c.out_dtype, {c.M, c.N}),
                    {a.data(), c.M, c.K, c.a_format, a_scale_inverse},
                    {b.data(), c.N, c.K, c.b_format, b_scale_inverse},
                    c.bias ? TensorView(bias.data(), bias_dtype, {c.N}) : TensorView(), c.accumulate);

    const Buffer a_device = upload(a), b_device = upload(b), bias_device = upload(bias);
    // Each scale inverse in its own 16-byte slot: cuBLASLt refuses FP8 scales that are not aligned.
    const Buffer scales = upload(std::vector<float>{a_scale_inverse, 0.f, 0.f, 0.f, b_scale_inverse});
    cuda::LtMatmulRunner runner(*allocator, stream);
    cuda::Fp8Gemm gemm;
    gemm.a = a_device.as<uint8_t>();
    gemm.a_format = c.a_format;
    gemm.a_scale_inverse = scales.as<float>();
    gemm.b = b_device.as<uint8_t>();
    gemm.b_format = c.b_format;
    gemm.b_scale_inverse = scales.as<float>() + 4;
    gemm.out = gpu_out.data();
    gemm.out_dtype = c.out_dtype;
    gemm.bias = c.bias ? bias_device.data() : nullptr;
    gemm.M = c.M;
    gemm.N = c.N;
    gemm.K = c.K;
    gemm.accumulate = c.accumulate;
    cuda::run_fp8_gemm(runner, gemm);
    const std::vector<unsigned char> gpu_bytes = download<unsigned char>(gpu_out.data(), cpu_out.size());
    expect_within_twice_the_cpus_error(as_doubles(gpu_bytes, c.out_dtype), as_doubles(cpu_out, c.out_dtype),
                                       reference, c.out_dtype, modelled);
}

}  // namespace mixgpt::gpu_test
#endif  // MIXGPT_WITH_CUDA
