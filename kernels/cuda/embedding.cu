// Token and position embeddings, forward and backward.
//
// The backward is deterministic without float atomics: for dwte the (token, row)
// pairs are sorted by token with CUB's stable radix sort (token_sort.h), and one
// block per run of equal tokens adds that run's rows in row order. dwpe is a
// per-column sum over the batch in batch order, or, with positions given
// (--positions document), sorted and added as dwte is, keyed by position.
#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/op_checks.h"
#include "kernels/cuda/token_sort.h"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;

// out (rows,C) = wte[tokens[row]] + wpe[p] (wpe null: none), p = positions[row] (null: row % T);
// a row whose token is outside [0, vocab) or whose position is outside [0, wpe_rows) is written as
// NaN, so a bad index shows up in the loss instead of reading out of bounds. N: elements per access.
template <typename T, int N>
__global__ void embedding_forward_kernel(T* out, const int32_t* tokens, const T* wte, const T* wpe,
                                         const int32_t* positions, int64_t rows, int seq_len, int wpe_rows,
                                         int C, int vocab) {
    declare_launch_limits<kThreads>();
    const int64_t packs_per_row = C / N;
    const int64_t pack = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (pack >= rows * packs_per_row) return;
    const int64_t row = pack / packs_per_row;
    const int c = static_cast<int>(pack % packs_per_row) * N;
    const int32_t token = tokens[row];
    const int64_t position = positions != nullptr ? positions[row] : row % seq_len;
    float sum[N];
    if (token < 0 || token >= vocab || (wpe != nullptr && (position < 0 || position >= wpe_rows))) {
#pragma unroll
        for (int i = 0; i < N; ++i) sum[i] = __int_as_float(0x7fc00000);
    } else {
        float w[N], p[N] = {};
        load_floats<N>(w, wte + int64_t{token} * C + c);
        if (wpe != nullptr) load_floats<N>(p, wpe + position * C + c);
#pragma unroll
        for (int i = 0; i < N; ++i) sum[i] = w[i] + p[i];
    }
    store_floats<N>(out + row * C + c, sum);
}

// dwpe (t,c) += sum over b of dout[b,t,c], in batch order; one thread per (t, c).
template <typename T>
__global__ void position_gradient_kernel(float* dwpe, const T* dout, int B, int seq_len, int C) {
    declare_launch_limits<kThreads>();
    const int64_t index = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (index >= int64_t{seq_len} * C) return;
    float sum = 0.f;
    for (int b = 0; b < B; ++b) sum += to_float(dout[int64_t{b} * seq_len * C + index]);
    dwpe[index] += sum;
}

__global__ void iota_kernel(int32_t* values, int64_t count) {
    declare_launch_limits<kThreads>();
    const int64_t index = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (index < count) values[index] = static_cast<int32_t>(index);
}

// One block per sorted row; the block at the start of a run of equal keys (tokens, or positions)
// adds dout rows sorted_rows[run] into table[key], in row order; keys outside [0, keys) are skipped.
template <typename T>
__global__ void sorted_gradient_kernel(float* table, const T* dout, const int32_t* sorted_keys,
                                       const int32_t* sorted_rows, int64_t rows, int C, int keys) {
    declare_launch_limits<kThreads>();
    const int64_t start = blockIdx.x;
    const int32_t key = sorted_keys[start];
    if ((start > 0 && sorted_keys[start - 1] == key) || key < 0 || key >= keys) return;
    int64_t end = start + 1;
    while (end < rows && sorted_keys[end] == key) ++end;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float sum = 0.f;
        for (int64_t i = start; i < end; ++i) sum += to_float(dout[int64_t{sorted_rows[i]} * C + c]);
        table[int64_t{key} * C + c] += sum;
    }
}

template <typename T>
void launch_embedding_forward(cudaStream_t stream, T* out, const int32_t* tokens, const T* wte, const T* wpe,
                              const int32_t* positions, int64_t rows, int seq_len, int wpe_rows, int C,
                              int vocab) {
    constexpr int N = kPack16<T>;
    if (C % N == 0 && all_aligned_16({out, wte, wpe}))
        launch_kernel(embedding_forward_kernel<T, N>, blocks_for(rows * C / N, kThreads), kThreads, 0, stream,
                      out, tokens, wte, wpe, positions, rows, seq_len, wpe_rows, C, vocab);
    else
        launch_kernel(embedding_forward_kernel<T, 1>, blocks_for(rows * C, kThreads), kThreads, 0, stream,
                      out, tokens, wte, wpe, positions, rows, seq_len, wpe_rows, C, vocab);
}

// Device memory of the dwte (and dwpe) sort, carved from one scratch region.
struct SortBuffers {
    int32_t* sorted_keys = nullptr;
    int32_t* rows = nullptr;
    int32_t* sorted_rows = nullptr;
    void* cub_storage = nullptr;
    size_t cub_bytes = 0;
};

size_t round_up_256(size_t bytes) { return (bytes + 255) / 256 * 256; }

SortBuffers sort_buffers(ScratchSpace& scratch, int64_t rows) {
    SortBuffers buffers;
    buffers.cub_bytes = token_sort_temporary_bytes(static_cast<int>(rows));
    const size_t array_bytes = round_up_256(static_cast<size_t>(rows) * sizeof(int32_t));
    auto* base = static_cast<char*>(
        scratch.get(ScratchSlot::embedding_sort, 3 * array_bytes + round_up_256(buffers.cub_bytes)));
    buffers.sorted_keys = reinterpret_cast<int32_t*>(base);
    buffers.rows = reinterpret_cast<int32_t*>(base + array_bytes);
    buffers.sorted_rows = reinterpret_cast<int32_t*>(base + 2 * array_bytes);
    buffers.cub_storage = base + 3 * array_bytes;
    return buffers;
}

// table (keys,C) += the dout rows (rows,C) of each key (rows) i32, in row order.
template <typename T>
void add_rows_by_key(cudaStream_t stream, const SortBuffers& sort, float* table, const T* dout,
                     const int32_t* row_keys, int64_t rows, int C, int keys) {
    launch_kernel(iota_kernel, blocks_for(rows, kThreads), kThreads, 0, stream, sort.rows, rows);
    sort_tokens_with_positions(sort.cub_storage, sort.cub_bytes, row_keys, sort.sorted_keys, sort.rows,
                               sort.sorted_rows, static_cast<int>(rows), stream);
    launch_kernel(sorted_gradient_kernel<T>, static_cast<unsigned>(rows), kThreads, 0, stream, table, dout,
                  sort.sorted_keys, sort.sorted_rows, rows, C, keys);
}

template <typename T>
void launch_embedding_backward(cudaStream_t stream, const SortBuffers& sort, float* dwte, float* dwpe,
                               const T* dout, const int32_t* tokens, const int32_t* positions, int B,
                               int seq_len, int wpe_rows, int C, int vocab) {
    const int64_t rows = int64_t{B} * seq_len;
    if (dwpe != nullptr && positions == nullptr)
        launch_kernel(position_gradient_kernel<T>, blocks_for(int64_t{seq_len} * C, kThreads), kThreads, 0,
                      stream, dwpe, dout, B, seq_len, C);
    else if (dwpe != nullptr)
        add_rows_by_key(stream, sort, dwpe, dout, positions, rows, C, wpe_rows);
    add_rows_by_key(stream, sort, dwte, dout, tokens, rows, C, vocab);
}

}  // namespace

void CudaBackend::embedding_forward(TensorView out, TensorView tokens, TensorView wte, TensorView wpe,
                                    TensorView positions) {
    const char* op = "embedding_forward";
    expect_rank(op, "out", out, 3);
    expect_rank(op, "wte", wte, 2);
    const int64_t B = out.dim(0), seq_len = out.dim(1), C = out.dim(2);
    expect_indices(op, "tokens", tokens, {B, seq_len});
    expect_tensor(op, "wte", wte, out.dtype, {wte.dim(0), C});
    if (wpe.valid()) {
        expect_rank(op, "wpe", wpe, 2);
        expect_tensor(op, "wpe", wpe, out.dtype, {wpe.dim(0), C});
        MIXGPT_REQUIRE(seq_len <= wpe.dim(0),
                       format("cuda embedding_forward: T = %lld exceeds wpe's %lld positions",
                              static_cast<long long>(seq_len), static_cast<long long>(wpe.dim(0))));
    }
    if (positions.valid()) expect_indices(op, "positions", positions, {B, seq_len});
    if (B * seq_len == 0) return;
    dispatch_dtype(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_embedding_forward<T>(stream_, out.as<T>(), tokens.as<const int32_t>(), wte.as<const T>(),
                                    wpe.valid() ? wpe.as<const T>() : nullptr,
                                    positions.valid() ? positions.as<const int32_t>() : nullptr, B * seq_len,
                                    static_cast<int>(seq_len), wpe.valid() ? static_cast<int>(wpe.dim(0)) : 0,
                                    static_cast<int>(C), static_cast<int>(wte.dim(0)));
    });
}

void CudaBackend::embedding_backward(TensorView dwte, TensorView dwpe, TensorView dout, TensorView tokens,
                                     TensorView positions) {
    const char* op = "embedding_backward";
    expect_rank(op, "dout", dout, 3);
    expect_rank(op, "dwte", dwte, 2);
    const int64_t B = dout.dim(0), seq_len = dout.dim(1), C = dout.dim(2);
    expect_indices(op, "tokens", tokens, {B, seq_len});
    expect_tensor(op, "dwte", dwte, DType::f32, {dwte.dim(0), C});
    if (dwpe.valid()) {
        expect_rank(op, "dwpe", dwpe, 2);
        expect_tensor(op, "dwpe", dwpe, DType::f32, {dwpe.dim(0), C});
        MIXGPT_REQUIRE(seq_len <= dwpe.dim(0),
                       format("cuda embedding_backward: T = %lld exceeds dwpe's %lld positions",
                              static_cast<long long>(seq_len), static_cast<long long>(dwpe.dim(0))));
    }
    if (positions.valid()) expect_indices(op, "positions", positions, {B, seq_len});
    if (B * seq_len == 0) return;
    const SortBuffers sort = sort_buffers(*scratch_, B * seq_len);
    dispatch_dtype(dout.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_embedding_backward<T>(stream_, sort, dwte.as<float>(), dwpe.as<float>(), dout.as<const T>(),
                                     tokens.as<const int32_t>(),
                                     positions.valid() ? positions.as<const int32_t>() : nullptr,
                                     static_cast<int>(B), static_cast<int>(seq_len),
                                     dwpe.valid() ? static_cast<int>(dwpe.dim(0)) : 0, static_cast<int>(C),
                                     static_cast<int>(dwte.dim(0)));
    });
}

}  // namespace mixgpt::cuda
