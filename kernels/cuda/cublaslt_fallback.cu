#include "core/error.h"
#include "core/fp8.h"
#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cublaslt_fallback.h"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr size_t kPieceAlignment = 256;

size_t round_up(size_t bytes) { return (bytes + kPieceAlignment - 1) / kPieceAlignment * kPieceAlignment; }

// out (count) = in (count), exactly: bf16 or fp16 to fp32.
template <typename From>
__global__ void widen_kernel(float* out, const From* in, int64_t count) {
    declare_launch_limits<kThreads>();
    const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (i < count) out[i] = to_float(in[i]);
}

// out (count) = the FP8 codes in (count) as bf16, exactly (every E4M3 and E5M2 value is a bf16
// value: 3 and 2 mantissa bits, exponents within bf16's).
__global__ void widen_fp8_kernel(__nv_bfloat16* out, const uint8_t* in, Fp8Format format, int64_t count) {
    declare_launch_limits<kThreads>();
    const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (i < count) out[i] = from_float<__nv_bfloat16>(fp8_bits_to_float(in[i], format));
}

// d (m,n; leading dimension ldd) = convert(factor · result [+ d] [+ bias (m)]), result (m,n) fp32
// with leading dimension m; factor = *a_scale · *b_scale (null: 1), as cuBLASLt folds the FP8
// scales into alpha. One rounding to T, as the epilogue's.
template <typename T, typename B>
__global__ void finish_product_kernel(T* d, int64_t ldd, const float* result, int64_t m, int64_t n,
                                      const float* a_scale, const float* b_scale, bool accumulate,
                                      const B* bias) {
    declare_launch_limits<kThreads>();
    const int64_t index = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (index >= m * n) return;
    const int64_t i = index % m, j = index / m;
    float value = result[index];
    if (a_scale != nullptr || b_scale != nullptr)
        value = (a_scale != nullptr ? *a_scale : 1.f) * (b_scale != nullptr ? *b_scale : 1.f) * value;
    T* out = d + i + j * ldd;
    if (accumulate) value = to_float(*out) + value;
    if (bias != nullptr) value += to_float(bias[i]);
    *out = from_float<T>(value);
}

bool is_fp8(cudaDataType type) { return type == CUDA_R_8F_E4M3 || type == CUDA_R_8F_E5M2; }

size_t type_size(cudaDataType type) {
    if (type == CUDA_R_32F) return 4;
    return is_fp8(type) ? 1 : 2;
}

const char* type_name(cudaDataType type) {
    switch (type) {
        case CUDA_R_32F:
            return "fp32";
        case CUDA_R_16F:
            return "fp16";
        case CUDA_R_16BF:
            return "bf16";
        case CUDA_R_8F_E4M3:
            return "e4m3";
        case CUDA_R_8F_E5M2:
            return "e5m2";
        default:
            return "an unknown type";
    }
}

// The type the widened route converts an operand of `type` to.
cudaDataType widened_type(cudaDataType type) { return is_fp8(type) ? CUDA_R_16BF : CUDA_R_32F; }

// Elements of a column-major (rows, cols) matrix with leading dimension ld, as stored.
int64_t stored_elements(int64_t rows, int64_t cols, int64_t ld) { return ld * (cols - 1) + rows; }
int64_t a_elements(const LtProduct& p) {
    return stored_elements(p.transpose_a ? p.k : p.m, p.transpose_a ? p.m : p.k, p.lda);
}
int64_t b_elements(const LtProduct& p) {
    return stored_elements(p.transpose_b ? p.n : p.k, p.transpose_b ? p.k : p.n, p.ldb);
}

void launch_widen(void* out, const void* in, cudaDataType from, int64_t count, cudaStream_t stream) {
    const unsigned blocks = blocks_for(count, kThreads);
    switch (from) {
        case CUDA_R_16BF:
            launch_kernel(widen_kernel<__nv_bfloat16>, blocks, kThreads, 0, stream, static_cast<float*>(out),
                          static_cast<const __nv_bfloat16*>(in), count);
            return;
        case CUDA_R_16F:
            launch_kernel(widen_kernel<__half>, blocks, kThreads, 0, stream, static_cast<float*>(out),
                          static_cast<const __half*>(in), count);
            return;
        default:
            launch_kernel(widen_fp8_kernel, blocks, kThreads, 0, stream, static_cast<__nv_bfloat16*>(out),
                          static_cast<const uint8_t*>(in),
                          from == CUDA_R_8F_E4M3 ? Fp8Format::e4m3 : Fp8Format::e5m2, count);
    }
}

}  // namespace

std::vector<LtRoute> fallback_routes(const LtProduct& p) {
    std::vector<LtRoute> routes;
    if (p.bias != nullptr || p.output_type != CUDA_R_32F) routes.push_back(LtRoute::fp32_output);
    if (p.compute_type == CUBLAS_COMPUTE_32F_FAST_TF32 || p.input_type != CUDA_R_32F ||
        b_type_of(p) != CUDA_R_32F)
        routes.push_back(LtRoute::widened_operands);
    return routes;
}

std::string route_name(const LtProduct& p, LtRoute route) {
    if (route == LtRoute::fp32_output) return "fp32 output with the epilogue in a kernel";
    if (p.input_type == CUDA_R_32F) return "fp32 compute instead of tf32";
    return std::string("operands widened to ") + type_name(widened_type(p.input_type));
}

size_t fallback_bytes(const LtProduct& p, LtRoute route) {
    size_t bytes = round_up(static_cast<size_t>(p.m * p.n) * sizeof(float));
    if (route != LtRoute::widened_operands) return bytes;
    if (p.input_type != CUDA_R_32F)
        bytes += round_up(static_cast<size_t>(a_elements(p)) * type_size(widened_type(p.input_type)));
    if (b_type_of(p) != CUDA_R_32F)
        bytes += round_up(static_cast<size_t>(b_elements(p)) * type_size(widened_type(b_type_of(p))));
    return bytes;
}

LtProduct rerouted_product(const LtProduct& p, LtRoute route, void* scratch) {
    char* next = static_cast<char*>(scratch);
    LtProduct r = p;
    r.d = next;
    r.ldd = p.m;
    r.output_type = CUDA_R_32F;
    r.bias = nullptr;
    r.bias_type = -1;
    r.accumulate = false;
    next += round_up(static_cast<size_t>(p.m * p.n) * sizeof(float));
    if (route != LtRoute::widened_operands) return r;
    const cudaDataType a_type = p.input_type, b_type = b_type_of(p);
    r.compute_type = CUBLAS_COMPUTE_32F;
    r.a_scale = r.b_scale = nullptr;
    r.input_type = widened_type(a_type);
    r.b_type = -1;
    if (a_type != CUDA_R_32F) {
        r.a = next;
        next += round_up(static_cast<size_t>(a_elements(p)) * type_size(r.input_type));
    }
    if (b_type != CUDA_R_32F) r.b = next;
    return r;
}

void widen_operands(const LtProduct& p, const LtProduct& r, cudaStream_t stream) {
    if (r.a != p.a) launch_widen(const_cast<void*>(r.a), p.a, p.input_type, a_elements(p), stream);
    if (r.b != p.b) launch_widen(const_cast<void*>(r.b), p.b, b_type_of(p), b_elements(p), stream);
}

void finish_product(const LtProduct& p, const LtProduct& r, cudaStream_t stream) {
    const float* a_scale = r.a_scale == nullptr ? p.a_scale : nullptr;
    const float* b_scale = r.b_scale == nullptr ? p.b_scale : nullptr;
    const int64_t count = p.m * p.n;
    const unsigned blocks = blocks_for(count, kThreads);
    const auto* result = static_cast<const float*>(r.d);
    const auto launch = [&](auto out_tag, auto bias_tag) {
        using T = decltype(out_tag);
        using B = decltype(bias_tag);
        launch_kernel(finish_product_kernel<T, B>, blocks, kThreads, 0, stream, static_cast<T*>(p.d), p.ldd,
                      result, p.m, p.n, a_scale, b_scale, p.accumulate, static_cast<const B*>(p.bias));
    };
    switch (p.output_type) {
        case CUDA_R_32F:
            if (bias_type_of(p) == CUDA_R_16BF)
                launch(float{}, __nv_bfloat16{});
            else
                launch(float{}, float{});
            return;
        case CUDA_R_16BF:
            launch(__nv_bfloat16{}, __nv_bfloat16{});
            return;
        case CUDA_R_16F:
            launch(__half{}, __half{});
            return;
        default:
            throw Error(std::string("cuBLASLt fallback: no epilogue kernel for D of ") +
                        type_name(p.output_type));
    }
}

std::string describe_product(const LtProduct& p) {
    const bool tf32 = p.compute_type == CUBLAS_COMPUTE_32F_FAST_TF32;
    return format("%s x %s -> %s%s%s, m=%lld n=%lld k=%lld (op %c%c, ld %lld/%lld/%lld)",
                  tf32 ? "tf32" : type_name(p.input_type), tf32 ? "tf32" : type_name(b_type_of(p)),
                  type_name(p.output_type), p.bias != nullptr ? " with bias" : "",
                  p.accumulate ? ", accumulating" : "", static_cast<long long>(p.m),
                  static_cast<long long>(p.n), static_cast<long long>(p.k), p.transpose_a ? 'T' : 'N',
                  p.transpose_b ? 'T' : 'N', static_cast<long long>(p.lda), static_cast<long long>(p.ldb),
                  static_cast<long long>(p.ldd));
}

}  // namespace mixgpt::cuda
