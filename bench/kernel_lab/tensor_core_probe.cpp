#include "bench/kernel_lab/tensor_core_probe.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "bench/kernel_lab/tensor_core_probe_mma.h"
#include "bench/kernel_lab/tensor_core_vectors.h"
#include "core/cuda_check.h"
#include "core/dtype.h"
#include "core/fp8.h"
#include "core/memory.h"
#include "kernels/cuda/cublaslt_matmul.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/tensor_core_model.h"

namespace mixgpt::lab {
namespace {

// The random products' sizes: K spans four of the FP8 model's promotion intervals.
constexpr int64_t kGemmM = 64, kGemmN = 64, kBf16K = 256, kFp8K = 512;

int device_sm(int device) {
    cudaDeviceProp properties{};
    CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    return properties.major * 10 + properties.minor;
}

uint16_t bits_of(double value, DType dtype) {
    const float rounded = static_cast<float>(value);
    uint16_t bits;
    convert_from_float(&rounded, &bits, dtype, 1);
    return bits;
}

double value_of(uint16_t bits, DType dtype) {
    float value;
    convert_to_float(&bits, dtype, &value, 1);
    return value;
}

// Half the inputs of unit scale, half spread over 2^-12 .. 2^12 (so that alignment cuts bits),
// both signs.
double random_input(std::mt19937_64& rng, bool wide) {
    std::uniform_real_distribution<double> unit(1.0, 2.0);
    std::uniform_int_distribution<int> exponent(wide ? -12 : -1, wide ? 12 : 0);
    const double magnitude = std::ldexp(unit(rng), exponent(rng));
    return rng() % 2 == 0 ? magnitude : -magnitude;
}

// A finite FP8 code, uniform over the codes (NaN and, in e5m2, the infinities left out).
uint8_t random_fp8_code(std::mt19937_64& rng, Fp8Format format) {
    for (;;) {
        const auto code = static_cast<uint8_t>(rng());
        const int magnitude = code & 0x7f;
        if (format == Fp8Format::e4m3 ? magnitude != 0x7f : magnitude < 0x7c) return code;
    }
}

float fp8_value(uint8_t code, Fp8Format format) {
    return format == Fp8Format::e4m3 ? e4m3_bits_to_float(code) : e5m2_bits_to_float(code);
}

std::string hex(float value) {
    char text[32];
    std::snprintf(text, sizeof text, "%a", static_cast<double>(value));
    return text;
}

// Host inputs of the mma tiles: A (16x16 row-major), B (16x8, b[k * 8 + n]), C (16x8 row-major).
struct Tiles {
    std::vector<uint16_t> a, b;
    std::vector<float> c;
    int count = 0;
};

Tiles make_tiles(DType dtype, int random_tiles, uint64_t seed) {
    const std::vector<DistinguishingVector>& vectors = distinguishing_vectors();
    Tiles tiles;
    tiles.count = static_cast<int>(vectors.size()) + random_tiles;
    tiles.a.assign(static_cast<size_t>(tiles.count) * 256, 0);
    tiles.b.assign(static_cast<size_t>(tiles.count) * 128, 0);
    tiles.c.assign(static_cast<size_t>(tiles.count) * 128, 0.f);
    for (size_t t = 0; t < vectors.size(); ++t) {  // row 0 of A, column 0 of B, C(0, 0)
        for (size_t k = 0; k < vectors[t].a.size(); ++k) {
            tiles.a[t * 256 + k] = bits_of(vectors[t].a[k], dtype);
            tiles.b[t * 128 + k * 8] = bits_of(vectors[t].b[k], dtype);
        }
        tiles.c[t * 128] = vectors[t].c;
    }
    std::mt19937_64 rng(seed);
    for (size_t t = vectors.size(); t < static_cast<size_t>(tiles.count); ++t) {
        const bool wide = t % 2 == 1;
        for (size_t i = 0; i < 256; ++i) tiles.a[t * 256 + i] = bits_of(random_input(rng, wide), dtype);
        for (size_t i = 0; i < 128; ++i) tiles.b[t * 128 + i] = bits_of(random_input(rng, wide), dtype);
        for (size_t i = 0; i < 128; ++i)
            tiles.c[t * 128 + i] = t % 4 == 0 ? 0.f : static_cast<float>(random_input(rng, wide) * 4);
    }
    return tiles;
}

// Device copies of host vectors, freed with the probe.
struct DeviceArrays {
    explicit DeviceArrays(cudaStream_t stream) : allocator(stream), stream(stream) {}
    template <typename T>
    T* upload(const std::vector<T>& values) {
        buffers.push_back(allocator.allocate(values.size() * sizeof(T)));
        CUDA_CHECK(cudaMemcpyAsync(buffers.back().data(), values.data(), values.size() * sizeof(T),
                                   cudaMemcpyHostToDevice, stream));
        return static_cast<T*>(buffers.back().data());
    }
    template <typename T>
    std::vector<T> download(const T* device, size_t count) {
        std::vector<T> values(count);
        CUDA_CHECK(cudaMemcpyAsync(values.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        return values;
    }
    cuda::DeviceAllocator allocator;
    cudaStream_t stream;
    std::vector<Buffer> buffers;
};

bool same_bits(float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; }

ProbeLine probe_mma(DeviceArrays& device, int sm, TensorCoreInput input, int random_tiles, uint64_t seed,
                    std::ofstream& failures) {
    const DType dtype = input == TensorCoreInput::bf16 ? DType::bf16 : DType::f16;
    const TensorCoreModel model = tensor_core_model(sm, input);
    const Tiles tiles = make_tiles(dtype, random_tiles, seed);
    float* d = device.upload(std::vector<float>(tiles.c.size(), 0.f));
    run_probe_mma(input == TensorCoreInput::bf16, device.upload(tiles.a), device.upload(tiles.b),
                  device.upload(tiles.c), d, tiles.count, device.stream);
    const std::vector<float> gpu = device.download(d, tiles.c.size());
    int exact_tiles = 0;
    for (int t = 0; t < tiles.count; ++t) {
        double a[256], b[128];
        for (int i = 0; i < 256; ++i) a[i] = value_of(tiles.a[t * 256 + i], dtype);
        for (int i = 0; i < 128; ++i) b[i] = value_of(tiles.b[t * 128 + i], dtype);
        int mismatches = 0;
        std::string details;
        for (int row = 0; row < 16; ++row)
            for (int n = 0; n < 8; ++n) {
                const size_t at = static_cast<size_t>(t) * 128 + static_cast<size_t>(row * 8 + n);
                const float expected = tensor_core_dot(model, a + row * 16, b + n, 8, 16, tiles.c[at]);
                if (same_bits(expected, gpu[at])) continue;
                ++mismatches;
                details += " (" + std::to_string(row) + "," + std::to_string(n) + "): gpu " + hex(gpu[at]) +
                           " model " + hex(expected);
            }
        if (mismatches == 0) {
            ++exact_tiles;
            continue;
        }
        if (!failures.is_open()) continue;
        failures << model.name << " mma.sync tile " << t << ": " << mismatches << " of 128 differ;" << details
                 << "\n  a (row-major 16x16, hex bits):";
        for (int i = 0; i < 256; ++i) failures << ' ' << std::hex << tiles.a[t * 256 + i];
        failures << "\n  b (k-major 16x8):";
        for (int i = 0; i < 128; ++i) failures << ' ' << tiles.b[t * 128 + i];
        failures << std::dec << "\n  c:";
        for (int i = 0; i < 128; ++i) failures << ' ' << hex(tiles.c[t * 128 + i]);
        failures << '\n';
    }
    return {"tensor-core model " + model.name + " mma.sync: " + std::to_string(exact_tiles) + "/" +
                std::to_string(tiles.count) + " tiles bit-exact",
            exact_tiles == tiles.count};
}

// Outputs of a cuBLASLt product (M x N, element (i, j) at i * N + j) against the model's dot
// products of op(A)'s rows and op(B)'s columns, given row by row (a_rows: M x K, b_columns: N x K).
ProbeLine compare_gemm(const std::string& what, const TensorCoreModel& model, const std::vector<double>& a_rows,
                       const std::vector<double>& b_columns, int64_t k, const std::vector<float>& gpu,
                       std::ofstream& failures) {
    int64_t exact = 0;
    for (int64_t i = 0; i < kGemmM; ++i)
        for (int64_t j = 0; j < kGemmN; ++j) {
            const float expected = tensor_core_dot(model, &a_rows[i * k], &b_columns[j * k], 1, k, 0.f);
            const float measured = gpu[i * kGemmN + j];
            if (same_bits(expected, measured)) {
                ++exact;
            } else if (failures.is_open()) {
                failures << what << " (" << i << "," << j << "): gpu " << hex(measured) << " model " << hex(expected)
                         << '\n';
            }
        }
    return {"tensor-core model " + what + ": " + std::to_string(exact) + "/" + std::to_string(kGemmM * kGemmN) +
                " outputs bit-exact",
            exact == kGemmM * kGemmN};
}

// D (M x N, column-major, fp32) = A (M x K, column-major, bf16) · B (K x N, column-major, bf16).
ProbeLine probe_bf16_gemm(DeviceArrays& device, int sm, uint64_t seed, std::ofstream& failures) {
    const TensorCoreModel model = tensor_core_model(sm, TensorCoreInput::bf16);
    const std::string what = model.name + " cuBLASLt";
    std::mt19937_64 rng(seed);
    std::vector<uint16_t> a(kGemmM * kBf16K), b(kBf16K * kGemmN);
    std::vector<double> a_rows(a.size()), b_columns(b.size());
    for (int64_t l = 0; l < kBf16K; ++l)
        for (int64_t i = 0; i < kGemmM; ++i) {
            a[i + l * kGemmM] = bits_of(random_input(rng, i % 2 == 1), DType::bf16);
            a_rows[i * kBf16K + l] = value_of(a[i + l * kGemmM], DType::bf16);
        }
    for (size_t i = 0; i < b.size(); ++i) {
        b[i] = bits_of(random_input(rng, false), DType::bf16);
        b_columns[i] = value_of(b[i], DType::bf16);  // column j is b[j * K ...]
    }
    cuda::LtProduct product;
    product.a = device.upload(a);
    product.lda = kGemmM;
    product.b = device.upload(b);
    product.ldb = kBf16K;
    float* d = device.upload(std::vector<float>(kGemmM * kGemmN, 0.f));
    product.d = d;
    product.ldd = kGemmM;
    product.m = kGemmM, product.n = kGemmN, product.k = kBf16K;
    product.input_type = CUDA_R_16BF;
    product.output_type = CUDA_R_32F;
    cuda::LtMatmulRunner runner(device.allocator, device.stream);
    if (!runner.try_run(product)) return {"tensor-core model " + what + ": cuBLASLt offered no algorithm", false};
    const std::vector<float> column_major = device.download(d, kGemmM * kGemmN);
    std::vector<float> gpu(column_major.size());
    for (int64_t i = 0; i < kGemmM; ++i)
        for (int64_t j = 0; j < kGemmN; ++j) gpu[i * kGemmN + j] = column_major[i + j * kGemmM];
    return compare_gemm(what, model, a_rows, b_columns, kBf16K, gpu, failures);
}

// out (M x N, fp32) = A (M x K) · B (N x K)^T, FP8 codes, both scales 1.
ProbeLine probe_fp8_gemm(DeviceArrays& device, Fp8Format a_format, uint64_t seed, std::ofstream& failures) {
    const TensorCoreModel model = tensor_core_model(
        90, a_format == Fp8Format::e4m3 ? TensorCoreInput::e4m3 : TensorCoreInput::e5m2);
    const std::string what = model.name + " x e4m3 cuBLASLt";
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> a(kGemmM * kFp8K), b(kGemmN * kFp8K);
    std::vector<double> a_rows(a.size()), b_rows(b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        a[i] = random_fp8_code(rng, a_format);
        a_rows[i] = fp8_value(a[i], a_format);
    }
    for (size_t i = 0; i < b.size(); ++i) {
        b[i] = random_fp8_code(rng, Fp8Format::e4m3);
        b_rows[i] = fp8_value(b[i], Fp8Format::e4m3);
    }
    cuda::Fp8Gemm gemm;
    gemm.a = device.upload(a);
    gemm.a_format = a_format;
    gemm.a_scale_inverse = device.upload(std::vector<float>{1.f});
    gemm.b = device.upload(b);
    gemm.b_scale_inverse = device.upload(std::vector<float>{1.f});
    float* out = device.upload(std::vector<float>(kGemmM * kGemmN, 0.f));
    gemm.out = out;
    gemm.out_dtype = DType::f32;
    gemm.M = kGemmM, gemm.N = kGemmN, gemm.K = kFp8K;
    cuda::LtMatmulRunner runner(device.allocator, device.stream);
    try {
        cuda::run_fp8_gemm(runner, gemm);
    } catch (const std::exception& error) {
        return {"tensor-core model " + what + ": not run: " + error.what(), false};
    }
    return compare_gemm(what, model, a_rows, b_rows, kFp8K, device.download(out, kGemmM * kGemmN), failures);
}

}  // namespace

std::vector<ProbeLine> run_tensor_core_probe(int device_index, cudaStream_t stream, int random_tiles, uint64_t seed,
                                             const std::string& failures_path) {
    const int sm = device_sm(device_index);
    if (sm != 80 && sm != 90)
        return {{"tensor-core model: none for sm_" + std::to_string(sm) + " (models: sm_80, sm_90)", true}};
    std::ofstream failures;
    if (!failures_path.empty()) failures.open(failures_path, std::ios::app);
    DeviceArrays device(stream);
    std::vector<ProbeLine> lines{probe_mma(device, sm, TensorCoreInput::bf16, random_tiles, seed, failures),
                                 probe_mma(device, sm, TensorCoreInput::fp16, random_tiles, seed + 1, failures),
                                 probe_bf16_gemm(device, sm, seed + 2, failures)};
    if (sm == 90) {
        lines.push_back(probe_fp8_gemm(device, Fp8Format::e4m3, seed + 3, failures));
        lines.push_back(probe_fp8_gemm(device, Fp8Format::e5m2, seed + 4, failures));
    }
    return lines;
}

}  // namespace mixgpt::lab
