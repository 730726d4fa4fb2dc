// Matrix products through cuBLASLt (forward, input gradient, weight gradient)
// and the deterministic column sums of the bias gradient.
//
// Row-major tensors are handed to cuBLASLt (column-major) as their transposes:
//   out (M,N) = inp (M,K) · weight (N,K)^T   is   out^T (N,M) = weight^T' · inp^T'
// where X^T' is the column-major view of the row-major X (no data moves).
//
// With the GELU epilogue, the product with its bias goes to pre_gelu and gelu_forward follows,
// never cuBLASLt's GELU epilogue: recomputation (model/README.md) needs out to be
// exactly gelu_forward(pre_gelu), and the epilogue applies its own GELU to the
// unrounded product.
//
// Under Precision::tf32 both operands are first rounded to TF32 (nearest even) in
// scratch memory, as the CPU backend does: the tensor cores read only the top 10
// mantissa bits of fp32 inputs, and that truncation has about 2.6 times the error
// of rounding. It costs one extra pass over the operands.
//
// The bias gradient is not taken from CUBLASLT_EPILOGUE_BGRADB: that epilogue
// overwrites its output in the output type, and dbias accumulates in fp32.
#include <algorithm>

#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kColumnsPerBlock = 32;
constexpr int kRowGroups = 8;      // threadIdx.y of the column-sum blocks
constexpr int kMaxRowChunks = 64;  // blocks along the rows of dout
constexpr int kMinRowsPerChunk = 256;
constexpr int kThreads = 256;  // of the one-dimensional launches

// partials (chunks, N): column sums of dout (M,N) over the rows of chunk blockIdx.y.
// Each thread sums rows ty, ty + 8, ... of the chunk; the 8 sums are added in ty order.
template <typename T>
__global__ void column_sum_partials_kernel(float* partials, const T* dout, int64_t M, int N,
                                           int64_t rows_per_chunk) {
    declare_launch_limits<kColumnsPerBlock * kRowGroups>();
    __shared__ float sums[kRowGroups][kColumnsPerBlock];
    const int column = blockIdx.x * kColumnsPerBlock + threadIdx.x;
    const int64_t first = int64_t{blockIdx.y} * rows_per_chunk;
    const int64_t last = std::min(M, first + rows_per_chunk);
    float sum = 0.f;
    if (column < N)
        for (int64_t row = first + threadIdx.y; row < last; row += kRowGroups)
            sum += to_float(dout[row * N + column]);
    shared_pointer(sums[threadIdx.y])[threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y != 0 || column >= N) return;
    float total = 0.f;
    for (int group = 0; group < kRowGroups; ++group) total += shared_pointer(sums[group])[threadIdx.x];
    partials[int64_t{blockIdx.y} * N + column] = total;
}

// dbias (N) += sum over chunks of partials (chunks, N), in chunk order.
__global__ void add_column_partials_kernel(float* dbias, const float* partials, int chunks, int N) {
    declare_launch_limits<kThreads>();
    const int column = blockIdx.x * blockDim.x + threadIdx.x;
    if (column >= N) return;
    float total = 0.f;
    for (int chunk = 0; chunk < chunks; ++chunk) total += partials[int64_t{chunk} * N + column];
    dbias[column] += total;
}

__device__ __forceinline__ float round_to_tf32(float value) {
    uint32_t bits = __float_as_uint(value);
    if ((bits & 0x7f800000u) == 0x7f800000u) return value;  // Inf and NaN unchanged
    bits += 0xfffu + ((bits >> 13) & 1u);
    return __uint_as_float(bits & ~0x1fffu);
}

// out (n) = in (n) rounded to TF32; N elements per access.
template <int N>
__global__ void round_to_tf32_kernel(float* out, const float* in, int64_t n) {
    declare_launch_limits<kThreads>();
    const int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) * N;
    if (i >= n) return;
    float values[N];
    load_floats<N>(values, in + i);
#pragma unroll
    for (int k = 0; k < N; ++k) values[k] = round_to_tf32(values[k]);
    store_floats<N>(out + i, values);
}

void launch_round_to_tf32(cudaStream_t stream, float* out, const float* in, int64_t n) {
    constexpr int N = 4;
    if (n % N == 0 && all_aligned_16({out, in}))
        launch_kernel(round_to_tf32_kernel<N>, blocks_for(n / N, kThreads), kThreads, 0, stream, out, in, n);
    else
        launch_kernel(round_to_tf32_kernel<1>, blocks_for(n, kThreads), kThreads, 0, stream, out, in, n);
}

// Points the product's A (a_count floats) and B (b_count floats) at TF32-rounded copies.
void use_tf32_operands(LtProduct& product, int64_t a_count, int64_t b_count, ScratchSpace& scratch,
                       cudaStream_t stream) {
    const size_t a_bytes = (static_cast<size_t>(a_count) * sizeof(float) + 255) / 256 * 256;
    auto* base = static_cast<char*>(
        scratch.get(ScratchSlot::tf32_operands, a_bytes + static_cast<size_t>(b_count) * sizeof(float)));
    auto* a = reinterpret_cast<float*>(base);
    auto* b = reinterpret_cast<float*>(base + a_bytes);
    launch_round_to_tf32(stream, a, static_cast<const float*>(product.a), a_count);
    launch_round_to_tf32(stream, b, static_cast<const float*>(product.b), b_count);
    product.a = a;
    product.b = b;
}

struct ColumnChunks {
    int chunks = 0;
    int64_t rows_per_chunk = 0;
};

ColumnChunks column_chunks(int64_t M) {
    const int chunks = static_cast<int>(std::clamp<int64_t>(M / kMinRowsPerChunk, 1, kMaxRowChunks));
    return {chunks, (M + chunks - 1) / chunks};
}

template <typename T>
void launch_bias_gradient(cudaStream_t stream, float* dbias, float* partials, const T* dout, int64_t M, int N,
                          const ColumnChunks& layout) {
    const dim3 grid(blocks_for(N, kColumnsPerBlock), static_cast<unsigned>(layout.chunks));
    launch_kernel(column_sum_partials_kernel<T>, grid, dim3(kColumnsPerBlock, kRowGroups), 0, stream,
                  partials, dout, M, N, layout.rows_per_chunk);
    launch_kernel(add_column_partials_kernel, blocks_for(N, kThreads), kThreads, 0, stream, dbias, partials,
                  layout.chunks, N);
}

cudaDataType cuda_type_of(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return CUDA_R_32F;
        case DType::bf16:
            return CUDA_R_16BF;
        case DType::f16:
            return CUDA_R_16F;
        case DType::i32:
            break;
    }
    throw Error(std::string("cuda matmul: no cuBLASLt type for a tensor of ") + dtype_name(dtype));
}

// FP32 accumulation always; fp32 inputs are read as TF32 under Precision::tf32.
cublasComputeType_t compute_type_for(DType act, Precision precision) {
    return act == DType::f32 && precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                             : CUBLAS_COMPUTE_32F;
}

}  // namespace

void CudaBackend::matmul_forward(TensorView out, TensorView pre_gelu, TensorView inp, TensorView weight,
                                 TensorView bias, MatmulEpilogue epilogue) {
    const char* op = "matmul_forward";
    expect_rank(op, "weight", weight, 2);
    const DType act = weight.dtype;
    const int64_t N = weight.dim(0), K = weight.dim(1);
    const int64_t M = expect_rows(op, "inp", inp, act, K);
    expect_matrix(op, "out", out, act, M, N);
    const bool with_bias = epilogue != MatmulEpilogue::none,
               with_gelu = epilogue == MatmulEpilogue::bias_gelu;
    MIXGPT_REQUIRE(bias.valid() == with_bias,
                   format("cuda %s: %s", op,
                          with_bias ? "the epilogue adds a bias, and bias is missing"
                                    : "bias is given, but the epilogue adds none"));
    MIXGPT_REQUIRE(pre_gelu.valid() == with_gelu,
                   format("cuda %s: %s", op,
                          with_gelu ? "the GELU epilogue stores pre_gelu, and pre_gelu is missing"
                                    : "pre_gelu is given, but the epilogue has no GELU"));
    if (with_gelu) expect_matrix(op, "pre_gelu", pre_gelu, act, M, N);
    if (with_bias) expect_tensor(op, "bias", bias, act, {N});
    if (M * N == 0) return;

    LtProduct product;
    product.a = weight.data;
    product.transpose_a = true;
    product.lda = K;
    product.b = inp.data;
    product.ldb = K;
    product.d = out.data;
    product.ldd = N;
    product.m = N;
    product.n = M;
    product.k = K;
    product.input_type = product.output_type = cuda_type_of(act);
    product.compute_type = compute_type_for(act, precision_);
    product.bias = bias.data;
    // The heuristic is told the bias pointer, but kernels assuming a 16-byte aligned bias have been
    // reported to fault on one viewed at an offset (pytorch/pytorch#194497): such a bias is copied.
    if (bias.valid() && !is_aligned(bias.data, 16)) {
        void* aligned = scratch_->get(ScratchSlot::matmul_bias, bias.bytes());
        CUDA_CHECK(cudaMemcpyAsync(aligned, bias.data, bias.bytes(), cudaMemcpyDeviceToDevice, stream_));
        product.bias = aligned;
    }
    if (product.compute_type == CUBLAS_COMPUTE_32F_FAST_TF32)
        use_tf32_operands(product, N * K, M * K, *scratch_, stream_);
    if (with_gelu) product.d = pre_gelu.data;
    matmuls_->run(product, "cuda matmul_forward");
    if (with_gelu) gelu_forward(out, pre_gelu);
}

void CudaBackend::matmul_backward_input(TensorView dinp, TensorView dout, TensorView weight,
                                        bool accumulate) {
    const char* op = "matmul_backward_input";
    expect_rank(op, "weight", weight, 2);
    const DType act = weight.dtype;
    const int64_t N = weight.dim(0), K = weight.dim(1);
    const int64_t M = expect_rows(op, "dout", dout, act, N);
    expect_matrix(op, "dinp", dinp, act, M, K);
    if (M * K == 0) return;

    // dinp^T' (K,M) = weight^T' (K,N) · dout^T' (N,M)
    LtProduct product;
    product.a = weight.data;
    product.lda = K;
    product.b = dout.data;
    product.ldb = N;
    product.d = dinp.data;
    product.ldd = K;
    product.m = K;
    product.n = M;
    product.k = N;
    product.input_type = product.output_type = cuda_type_of(act);
    product.compute_type = compute_type_for(act, precision_);
    product.accumulate = accumulate;
    if (product.compute_type == CUBLAS_COMPUTE_32F_FAST_TF32)
        use_tf32_operands(product, N * K, M * N, *scratch_, stream_);
    matmuls_->run(product, "cuda matmul_backward_input");
}

void CudaBackend::matmul_backward_weight(TensorView dweight, TensorView dbias, TensorView dout,
                                         TensorView inp) {
    const char* op = "matmul_backward_weight";
    expect_rank(op, "dweight", dweight, 2);
    const int64_t N = dweight.dim(0), K = dweight.dim(1);
    expect_tensor(op, "dweight", dweight, DType::f32, {N, K});
    const DType act = inp.dtype;
    const int64_t M = expect_rows(op, "inp", inp, act, K);
    expect_matrix(op, "dout", dout, act, M, N);
    if (dbias.valid()) expect_tensor(op, "dbias", dbias, DType::f32, {N});
    if (M == 0 || N == 0) return;

    // dweight^T' (K,N) += inp^T' (K,M) · (dout^T' (N,M))^T
    LtProduct product;
    product.a = inp.data;
    product.lda = K;
    product.b = dout.data;
    product.transpose_b = true;
    product.ldb = N;
    product.d = dweight.data;
    product.ldd = K;
    product.m = K;
    product.n = N;
    product.k = M;
    product.input_type = cuda_type_of(act);
    product.output_type = CUDA_R_32F;
    product.compute_type = compute_type_for(act, precision_);
    product.accumulate = true;
    if (product.compute_type == CUBLAS_COMPUTE_32F_FAST_TF32)
        use_tf32_operands(product, M * K, M * N, *scratch_, stream_);
    matmuls_->run(product, "cuda matmul_backward_weight");
    if (dbias.valid()) add_bias_gradient(dbias, dout);
}

void CudaBackend::add_bias_gradient(TensorView dbias, TensorView dout) {
    const int64_t M = dout.dim(0), N = dout.dim(1);
    const ColumnChunks layout = column_chunks(M);
    auto* partials = static_cast<float*>(
        scratch_->get(ScratchSlot::bias_partials, static_cast<size_t>(layout.chunks) * N * sizeof(float)));
    dispatch_dtype(dout.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_bias_gradient<T>(stream_, dbias.as<float>(), partials, dout.as<const T>(), M,
                                static_cast<int>(N), layout);
    });
}

}  // namespace mixgpt::cuda
