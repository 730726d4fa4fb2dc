#include "bench/kernel_lab/fp8_gemm_lab.h"

#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/kernel_lab/lab_check.h"
#include "bench/kernel_lab/lab_fill.h"
#include "core/cuda_check.h"
#include "core/fp8.h"
#include "core/log.h"
#include "kernels/cpu/fp8_cast.h"
#include "kernels/cpu/fp8_matmul.h"
#include "kernels/cuda/cublaslt_matmul.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/fp8_cast.h"
#include "kernels/cuda/fp8_support.h"

namespace mixgpt::lab {
namespace {

enum class Variant { bf16, e4m3_e4m3, e5m2_e4m3 };

const char* kernel_name(Variant variant) {
    switch (variant) {
        case Variant::bf16:
            return "bf16_gemm (cuBLASLt)";
        case Variant::e4m3_e4m3:
            return "fp8_gemm e4m3 x e4m3 -> bf16";
        case Variant::e5m2_e4m3:
            return "fp8_gemm e5m2 x e4m3 -> bf16";
    }
    return "";
}

Fp8Format a_format(Variant variant) {
    return variant == Variant::e5m2_e4m3 ? Fp8Format::e5m2 : Fp8Format::e4m3;
}

constexpr LinearShape kValidationShape{"", "", 96, 80, 128};
constexpr int64_t kQuantizeValidationRows = 70, kQuantizeValidationCols = 96;

// The lab's device memory and cuBLASLt runner, on its stream.
struct Device {
    explicit Device(const LabContext& context)
        : allocator(context.stream), runner(allocator, context.stream) {}
    cuda::DeviceAllocator allocator;
    cuda::LtMatmulRunner runner;

    Buffer upload(const void* data, size_t bytes, cudaStream_t stream) {
        Buffer buffer = allocator.allocate(bytes);
        CUDA_CHECK(cudaMemcpyAsync(buffer.data(), data, bytes, cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        return buffer;
    }
};

// out (M,N) bf16 = a (M,K) · b (N,K)^T, FP8 (with device scale inverses a_scale, b_scale) or bf16.
void run_product(Device& device, Variant variant, const LinearShape& s, const void* a, const void* b,
                 void* out, const float* a_scale, const float* b_scale) {
    if (variant == Variant::bf16) {
        cuda::LtProduct p;  // out^T = b · a^T, as run_fp8_gemm
        p.a = b;
        p.transpose_a = true;
        p.lda = s.K;
        p.b = a;
        p.ldb = s.K;
        p.d = out;
        p.ldd = s.N;
        p.m = s.N;
        p.n = s.M;
        p.k = s.K;
        p.input_type = p.output_type = CUDA_R_16BF;
        MIXGPT_REQUIRE(device.runner.try_run(p), "kernel lab: cuBLASLt has no bf16 algorithm for " +
                                                     std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                                                     std::to_string(s.K));
        return;
    }
    cuda::Fp8Gemm g;
    g.a = static_cast<const uint8_t*>(a);
    g.a_format = a_format(variant);
    g.a_scale_inverse = a_scale;
    g.b = static_cast<const uint8_t*>(b);
    g.b_scale_inverse = b_scale;
    g.out = out;
    g.M = s.M;
    g.N = s.N;
    g.K = s.K;
    cuda::run_fp8_gemm(device.runner, g);
}

std::vector<uint8_t> random_codes(size_t count, Fp8Format format, std::mt19937& random) {
    std::normal_distribution<float> normal(0.f, 4.f);
    std::vector<float> values(count);
    for (float& value : values) value = normal(random);
    std::vector<uint8_t> codes(count);
    convert_to_fp8(values.data(), codes.data(), count, format);
    return codes;
}

std::vector<float> as_floats(const std::vector<unsigned char>& bytes, DType dtype) {
    std::vector<float> values(bytes.size() / dtype_size(dtype));
    convert_to_float(bytes.data(), dtype, values.data(), values.size());
    return values;
}

// The product on the device at the validation shape against float64 (module comment).
Check validate_product(const LabContext& context, Device& device, Variant variant) {
    const LinearShape& s = kValidationShape;
    std::mt19937 random(static_cast<uint32_t>(context.seed));
    const size_t a_count = static_cast<size_t>(s.M * s.K), b_count = static_cast<size_t>(s.N * s.K);
    const size_t out_count = static_cast<size_t>(s.M * s.N);
    std::vector<double> a_values(a_count), b_values(b_count);
    std::vector<unsigned char> a_bytes, b_bytes;
    std::vector<float> cpu(out_count);
    const float a_scale = 0.5f, b_scale = 0.125f;
    if (variant == Variant::bf16) {
        std::normal_distribution<float> normal(0.f, 1.f);
        std::vector<float> a(a_count), b(b_count);
        for (float& value : a) value = normal(random);
        for (float& value : b) value = normal(random);
        a_bytes.resize(a_count * 2);
        b_bytes.resize(b_count * 2);
        convert_from_float(a.data(), a_bytes.data(), DType::bf16, a_count);
        convert_from_float(b.data(), b_bytes.data(), DType::bf16, b_count);
        const std::vector<float> a_held = as_floats(a_bytes, DType::bf16),
                                 b_held = as_floats(b_bytes, DType::bf16);
        a_values.assign(a_held.begin(), a_held.end());
        b_values.assign(b_held.begin(), b_held.end());
    } else {
        const std::vector<uint8_t> a = random_codes(a_count, a_format(variant), random);
        const std::vector<uint8_t> b = random_codes(b_count, Fp8Format::e4m3, random);
        a_bytes.assign(a.begin(), a.end());
        b_bytes.assign(b.begin(), b.end());
        for (size_t i = 0; i < a_count; ++i)
            a_values[i] = fp8_bits_to_float(a[i], a_format(variant)) * double{a_scale};
        for (size_t i = 0; i < b_count; ++i) b_values[i] = e4m3_bits_to_float(b[i]) * double{b_scale};
        std::vector<unsigned char> out(out_count * 2);
        cpu::fp8_matmul(TensorView(out.data(), DType::bf16, {s.M, s.N}),
                        {a.data(), s.M, s.K, a_format(variant), a_scale},
                        {b.data(), s.N, s.K, Fp8Format::e4m3, b_scale}, TensorView(), false);
        cpu = as_floats(out, DType::bf16);
    }
    std::vector<float> reference(out_count);
    for (int64_t m = 0; m < s.M; ++m)
        for (int64_t n = 0; n < s.N; ++n) {
            double sum = 0;
            for (int64_t k = 0; k < s.K; ++k)
                sum +=
                    a_values[static_cast<size_t>(m * s.K + k)] * b_values[static_cast<size_t>(n * s.K + k)];
            reference[static_cast<size_t>(m * s.N + n)] = static_cast<float>(sum);
        }
    if (variant == Variant::bf16) cpu = rounded(reference, DType::bf16);

    const Buffer a = device.upload(a_bytes.data(), a_bytes.size(), context.stream);
    const Buffer b = device.upload(b_bytes.data(), b_bytes.size(), context.stream);
    const float scales_host[5] = {a_scale, 0.f, 0.f, 0.f, b_scale};  // 16 bytes apart, as cuBLASLt needs
    const Buffer scales = device.upload(scales_host, sizeof scales_host, context.stream);
    const Buffer out = device.allocator.allocate(out_count * 2);
    run_product(device, variant, s, a.data(), b.data(), out.data(), scales.as<float>(),
                scales.as<float>() + 4);
    std::vector<unsigned char> gpu_bytes(out_count * 2);
    CUDA_CHECK(cudaStreamSynchronize(context.stream));
    CUDA_CHECK(cudaMemcpy(gpu_bytes.data(), out.data(), gpu_bytes.size(), cudaMemcpyDeviceToHost));
    return judge("out", as_floats(gpu_bytes, DType::bf16), cpu, reference, DType::bf16);
}

// The quantization (with transpose) on the device against the CPU's: the number of codes, amaxes
// and counts that differ, which must be 0.
Check validate_quantize(const LabContext& context, Device& device) {
    const int64_t rows = kQuantizeValidationRows, cols = kQuantizeValidationCols;
    const size_t count = static_cast<size_t>(rows * cols);
    std::mt19937 random(static_cast<uint32_t>(context.seed) + 1);
    std::normal_distribution<float> normal(0.f, 200.f);  // some saturate at scale 16
    std::vector<float> values(count);
    for (float& value : values) value = normal(random);
    std::vector<unsigned char> input(count * 2);
    convert_from_float(values.data(), input.data(), DType::bf16, count);
    const float scale_value = 16.f;
    std::vector<uint8_t> codes(count), transposed(count);
    const Fp8QuantizeStats stats =
        cpu::quantize_fp8(TensorView(input.data(), DType::bf16, {rows, cols}), scale_value, Fp8Format::e4m3,
                          codes.data(), transposed.data());
    const Buffer in = device.upload(input.data(), input.size(), context.stream);
    const Buffer scale = device.upload(&scale_value, sizeof scale_value, context.stream);
    const Buffer totals = device.allocator.allocate(16);  // amax (float), then the count (u64)
    const Buffer out = device.allocator.allocate(count), out_t = device.allocator.allocate(count);
    cuda::Fp8QuantizeParams params;
    params.in = in.data();
    params.rows = rows;
    params.cols = cols;
    params.scale = scale.as<float>();
    params.codes = out.as<uint8_t>();
    params.codes_transposed = out_t.as<uint8_t>();
    params.amax = totals.as<float>();
    params.saturated = reinterpret_cast<unsigned long long*>(totals.as<char>() + 8);
    cuda::fp8_quantize(params, context.stream);
    std::vector<uint8_t> got(count), got_t(count);
    float amax = 0;
    unsigned long long saturated = 0;
    CUDA_CHECK(cudaStreamSynchronize(context.stream));
    CUDA_CHECK(cudaMemcpy(got.data(), out.data(), count, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(got_t.data(), out_t.data(), count, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&amax, totals.data(), sizeof amax, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&saturated, totals.as<char>() + 8, sizeof saturated, cudaMemcpyDeviceToHost));
    double differences = amax != stats.amax ? 1 : 0;
    differences += saturated != stats.saturated ? 1 : 0;
    for (size_t i = 0; i < count; ++i) differences += (got[i] != codes[i]) + (got_t[i] != transposed[i]);
    return {"codes, amax and count differing from the CPU's", differences, 0};
}

std::string shape_text(const LinearShape& s, const char* suffix = "") {
    return format("%s %s%s M=%lld N=%lld K=%lld", s.model, s.layer, suffix, static_cast<long long>(s.M),
                  static_cast<long long>(s.N), static_cast<long long>(s.K));
}

// One rotation set of a product's operands and output, filled on the device with values of std 1
// (FP8 operands: quantized from such bf16 values at scale 1, inside both formats' range).
struct ProductSet {
    Buffer a, b, out;
};

ProductSet make_set(const LabContext& context, Device& device, Variant variant, const LinearShape& s,
                    const float* one, uint64_t seed) {
    const size_t a_count = static_cast<size_t>(s.M * s.K), b_count = static_cast<size_t>(s.N * s.K);
    ProductSet set;
    set.out = device.allocator.allocate(static_cast<size_t>(s.M * s.N) * 2);
    if (variant == Variant::bf16) {
        set.a = device.allocator.allocate(a_count * 2);
        set.b = device.allocator.allocate(b_count * 2);
        fill_random(set.a.data(), DType::bf16, static_cast<int64_t>(a_count), seed, 1.f, 0.f, context.stream);
        fill_random(set.b.data(), DType::bf16, static_cast<int64_t>(b_count), seed + 1, 1.f, 0.f,
                    context.stream);
        return set;
    }
    const Buffer staging = device.allocator.allocate(std::max(a_count, b_count) * 2);
    const auto quantized = [&](size_t count, int64_t rows, Fp8Format format, uint64_t fill_seed) {
        Buffer codes = device.allocator.allocate(count);
        fill_random(staging.data(), DType::bf16, static_cast<int64_t>(count), fill_seed, 1.f, 0.f,
                    context.stream);
        cuda::Fp8QuantizeParams params;
        params.in = staging.data();
        params.rows = rows;
        params.cols = s.K;
        params.format = format;
        params.scale = one;
        params.codes = codes.as<uint8_t>();
        cuda::fp8_quantize(params, context.stream);
        return codes;
    };
    set.a = quantized(a_count, s.M, a_format(variant), seed);
    set.b = quantized(b_count, s.N, Fp8Format::e4m3, seed + 1);
    CUDA_CHECK(cudaStreamSynchronize(context.stream));  // before `staging` is freed
    return set;
}

Row product_row(const LabContext& context, Device& device, Variant variant, const LinearShape& s,
                const float* one, const Check& check, const char* suffix) {
    const size_t set_bytes = static_cast<size_t>(s.M * s.K + s.N * s.K) * (variant == Variant::bf16 ? 2 : 1) +
                             static_cast<size_t>(s.M * s.N) * 2;
    const int sets = rotation_sets(set_bytes, context.l2_bytes);
    std::vector<ProductSet> rotation;
    for (int i = 0; i < sets; ++i)
        rotation.push_back(
            make_set(context, device, variant, s, one, context.seed + 2 * static_cast<uint64_t>(i)));
    const double milliseconds = time_with_events(
        context.stream,
        [&](int i) {
            const ProductSet& set = rotation[static_cast<size_t>(i % sets)];
            run_product(device, variant, s, set.a.data(), set.b.data(), set.out.data(), one, one);
        },
        context.timing);
    Row row;
    row.kernel = kernel_name(variant);
    row.shape = shape_text(s, suffix);
    row.dims = {{"M", s.M}, {"N", s.N}, {"K", s.K}};
    row.milliseconds = milliseconds;
    row.rate = Rate::tflop_per_s;
    row.achieved = 2.0 * static_cast<double>(s.M) * static_cast<double>(s.N) * static_cast<double>(s.K) /
                   (milliseconds * 1e-3) / 1e12;
    row.validation = summarize({check});
    row.valid = check.passed();
    return row;
}

// FP8 quantization of a layer input (M, C) bf16 with its transpose, amax and count.
Row quantize_row(const LabContext& context, Device& device, const LinearShape& s, const float* one,
                 const Check& check) {
    const int64_t rows = s.M, cols = s.K;
    const size_t count = static_cast<size_t>(rows * cols);
    const int sets = rotation_sets(4 * count, context.l2_bytes);
    std::vector<Buffer> inputs, codes, transposed;
    for (int i = 0; i < sets; ++i) {
        inputs.push_back(device.allocator.allocate(count * 2));
        codes.push_back(device.allocator.allocate(count));
        transposed.push_back(device.allocator.allocate(count));
        fill_random(inputs.back().data(), DType::bf16, static_cast<int64_t>(count), context.seed + 7 + i, 1.f,
                    0.f, context.stream);
    }
    const Buffer totals = device.allocator.allocate(16);
    const double milliseconds = time_with_events(
        context.stream,
        [&](int i) {
            const size_t set = static_cast<size_t>(i % sets);
            cuda::Fp8QuantizeParams params;
            params.in = inputs[set].data();
            params.rows = rows;
            params.cols = cols;
            params.scale = one;
            params.codes = codes[set].as<uint8_t>();
            params.codes_transposed = transposed[set].as<uint8_t>();
            params.amax = totals.as<float>();
            params.saturated = reinterpret_cast<unsigned long long*>(totals.as<char>() + 8);
            cuda::fp8_quantize(params, context.stream);
        },
        context.timing);
    Row row;
    row.kernel = "fp8_quantize bf16 -> e4m3 + transpose";
    row.shape = format("%s layer input N=%lld C=%lld", s.model, static_cast<long long>(rows),
                       static_cast<long long>(cols));
    row.dims = {{"N", rows}, {"C", cols}};
    row.milliseconds = milliseconds;
    row.rate = Rate::gb_per_s;
    row.achieved = 4.0 * static_cast<double>(count) / (milliseconds * 1e-3) / 1e9;  // 2 read, 1 + 1 written
    row.validation = summarize({check});
    row.valid = check.passed();
    return row;
}

}  // namespace

std::vector<LinearShape> linear_shapes(LabSizes sizes) {
    const bool smoke = sizes == LabSizes::smoke;
    const int64_t tokens = smoke ? 64 : 16384;
    std::vector<LinearShape> shapes;
    for (const auto& [model, channels] : {std::pair<const char*, int64_t>{"d12", smoke ? 32 : 768},
                                          std::pair<const char*, int64_t>{"d24", smoke ? 48 : 1024}}) {
        shapes.push_back({model, "qkv", tokens, 3 * channels, channels});
        shapes.push_back({model, "attn_proj", tokens, channels, channels});
        shapes.push_back({model, "mlp_up", tokens, 4 * channels, channels});
        shapes.push_back({model, "mlp_down", tokens, channels, 4 * channels});
    }
    return shapes;
}

std::vector<Row> fp8_gemm_rows(const LabContext& context) {
    cudaDeviceProp properties{};
    CUDA_CHECK(cudaGetDeviceProperties(&properties, context.device));
    const std::string fp8_problem =
        cuda::fp8_support_problem(properties.major, properties.minor, properties.name, context.device);
    if (!fp8_problem.empty()) log_warning("kernel lab: FP8 rows skipped: " + fp8_problem);
    const bool with_fp8 = fp8_problem.empty();
    Device device(context);
    const float one_host = 1.f;
    const Buffer one = device.upload(&one_host, sizeof one_host, context.stream);

    std::vector<Variant> variants = {Variant::bf16};
    if (with_fp8) variants.insert(variants.end(), {Variant::e4m3_e4m3, Variant::e5m2_e4m3});
    std::vector<Check> checks;
    for (const Variant variant : variants) {
        checks.push_back(validate_product(context, device, variant));
        log_info(format("%s: %s", kernel_name(variant), summarize({checks.back()}).c_str()));
    }
    const Check quantize_check = with_fp8 ? validate_quantize(context, device) : Check{};
    if (with_fp8) log_info("fp8_quantize: " + summarize({quantize_check}));

    std::vector<Row> rows;
    for (const LinearShape& shape : linear_shapes(context.sizes)) {
        for (size_t v = 0; v < 2 && v < variants.size(); ++v)
            rows.push_back(product_row(context, device, variants[v], shape, one.as<float>(), checks[v], ""));
        if (!with_fp8 || std::string(shape.layer) != "mlp_up") continue;
        // The MLP-up input gradient: dinp (M, C) = dout (M, 4C) · W (4C, C), i.e. B = W^T (C, 4C).
        const LinearShape gradient{shape.model, shape.layer, shape.M, shape.K, shape.N};
        rows.push_back(
            product_row(context, device, Variant::bf16, gradient, one.as<float>(), checks[0], " dgrad"));
        rows.push_back(
            product_row(context, device, Variant::e5m2_e4m3, gradient, one.as<float>(), checks[2], " dgrad"));
        rows.push_back(quantize_row(context, device, shape, one.as<float>(), quantize_check));
    }
    return rows;
}

}  // namespace mixgpt::lab
