// Document bounds of the document mask (kernels/ops.def, document_bounds and
// document_starts_decoding). document_bounds: one block per sequence; each thread scans a
// contiguous chunk of it for separators, the chunks' results are combined through shared memory
// (a prefix max for the starts, a suffix min for the ends) and each thread writes its chunk. And
// the sliding window folded into the bounds for the flash kernels (CudaBackend::folded_window),
// and the positions within documents of --positions document.
#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;

// Grid (B): starts, ends (B,T) of tokens (B,T).
__global__ void document_bounds_kernel(int32_t* starts, int32_t* ends, const int32_t* tokens, int T,
                                       int separator) {
    declare_launch_limits<kThreads>();
    // Per thread's chunk: where the document after its last separator starts (0: none), and one
    // past its first separator (T: none).
    __shared__ int32_t chunk_open[kThreads];
    __shared__ int32_t chunk_close[kThreads];
    const int64_t row = int64_t{blockIdx.x} * T;
    const int chunk = (T + kThreads - 1) / kThreads;
    const int begin = min(T, static_cast<int>(threadIdx.x) * chunk), end = min(T, begin + chunk);
    int32_t open = 0, close = T;
    for (int t = begin; t < end; ++t)
        if (tokens[row + t] == separator) {
            open = t + 1;
            close = min(close, t + 1);
        }
    chunk_open[threadIdx.x] = open;
    chunk_close[threadIdx.x] = close;
    __syncthreads();
    open = 0;
    close = T;
    for (int u = 0; u < static_cast<int>(threadIdx.x); ++u) open = max(open, chunk_open[u]);
    for (int u = kThreads - 1; u > static_cast<int>(threadIdx.x); --u) close = min(close, chunk_close[u]);
    for (int t = begin; t < end; ++t) {
        starts[row + t] = open;
        if (tokens[row + t] == separator) open = t + 1;
    }
    for (int t = end - 1; t >= begin; --t) {
        if (tokens[row + t] == separator) close = t + 1;
        ends[row + t] = close;
    }
}

// One thread per row b: starts (B,Tn) of the new tokens (B,Tn) at `position`, open (B) carried.
__global__ void document_starts_decoding_kernel(int32_t* starts, int32_t* open, const int32_t* tokens, int B,
                                                int Tn, int position, int separator) {
    declare_launch_limits<kThreads>();
    const int b = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (b >= B) return;
    int32_t current = position == 0 ? 0 : open[b];
    for (int t = 0; t < Tn; ++t) {
        starts[int64_t{b} * Tn + t] = current;
        if (tokens[int64_t{b} * Tn + t] == separator) current = position + t + 1;
    }
    open[b] = current;
}

// A thread per position of (B,T): starts, ends with the window folded into the document bounds
// (null: the whole sequence).
__global__ void fold_window_kernel(int32_t* starts, int32_t* ends, const int32_t* document_starts,
                                   const int32_t* document_ends, int64_t rows, int T, int window) {
    declare_launch_limits<kThreads>();
    const int64_t index = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (index >= rows) return;
    const int t = static_cast<int>(index % T);
    const int start = document_starts == nullptr ? 0 : document_starts[index];
    const int end = document_ends == nullptr ? T : document_ends[index];
    starts[index] = max(start, t - window + 1);
    ends[index] = min(end, t + window);
}

// A thread per position of (rows = B·T): positions = first_position + t - starts.
__global__ void document_positions_kernel(int32_t* positions, const int32_t* starts, int64_t rows, int T,
                                          int first_position) {
    declare_launch_limits<kThreads>();
    const int64_t index = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (index >= rows) return;
    positions[index] = first_position + static_cast<int>(index % T) - starts[index];
}

}  // namespace

AttentionParams CudaBackend::folded_window(const AttentionParams& params, int64_t B, int64_t T) {
    if (params.window == 0) return params;
    MIXGPT_REQUIRE(params.window > 0, format("cuda attention: window %d is negative (0: none)", params.window));
    const int64_t rows = B * T;
    auto* bounds = static_cast<int32_t*>(scratch_->get(ScratchSlot::window_bounds, 2 * rows * sizeof(int32_t)));
    AttentionParams folded = params;
    folded.document_starts = TensorView(bounds, DType::i32, {B, T});
    folded.document_ends = TensorView(bounds + rows, DType::i32, {B, T});
    folded.window = 0;
    if (rows == 0) return folded;
    launch_kernel(fold_window_kernel, blocks_for(rows, kThreads), kThreads, 0, stream_, bounds, bounds + rows,
                  params.document_starts.valid() ? params.document_starts.as<const int32_t>() : nullptr,
                  params.document_ends.valid() ? params.document_ends.as<const int32_t>() : nullptr, rows,
                  static_cast<int>(T), params.window);
    return folded;
}

void CudaBackend::document_bounds(TensorView starts, TensorView ends, TensorView tokens, int separator) {
    const char* op = "document_bounds";
    expect_rank(op, "tokens", tokens, 2);
    const int64_t B = tokens.dim(0), T = tokens.dim(1);
    expect_tensor(op, "tokens", tokens, DType::i32, {B, T});
    expect_tensor(op, "starts", starts, DType::i32, {B, T});
    expect_tensor(op, "ends", ends, DType::i32, {B, T});
    MIXGPT_REQUIRE(B <= INT32_MAX && T <= INT32_MAX,
                   format("cuda %s: B = %lld or T = %lld is past the launch limits", op,
                          static_cast<long long>(B), static_cast<long long>(T)));
    if (B * T == 0) return;
    launch_kernel(document_bounds_kernel, dim3(static_cast<unsigned>(B)), kThreads, 0, stream_,
                  starts.as<int32_t>(), ends.as<int32_t>(), tokens.as<const int32_t>(), static_cast<int>(T),
                  separator);
}

void CudaBackend::document_starts_decoding(TensorView starts, TensorView open, TensorView tokens,
                                           int position, int separator) {
    const char* op = "document_starts_decoding";
    expect_rank(op, "tokens", tokens, 2);
    const int64_t B = tokens.dim(0), Tn = tokens.dim(1);
    expect_tensor(op, "tokens", tokens, DType::i32, {B, Tn});
    expect_tensor(op, "starts", starts, DType::i32, {B, Tn});
    expect_tensor(op, "open", open, DType::i32, {B});
    MIXGPT_REQUIRE(position >= 0, format("cuda %s: position %d is negative", op, position));
    if (B * Tn == 0) return;
    launch_kernel(document_starts_decoding_kernel, blocks_for(B, kThreads), kThreads, 0, stream_,
                  starts.as<int32_t>(), open.as<int32_t>(), tokens.as<const int32_t>(), static_cast<int>(B),
                  static_cast<int>(Tn), position, separator);
}

void CudaBackend::document_positions(TensorView positions, TensorView starts, int first_position) {
    const char* op = "document_positions";
    expect_rank(op, "starts", starts, 2);
    const int64_t B = starts.dim(0), T = starts.dim(1);
    expect_tensor(op, "starts", starts, DType::i32, {B, T});
    expect_tensor(op, "positions", positions, DType::i32, {B, T});
    MIXGPT_REQUIRE(first_position >= 0 && T <= INT32_MAX,
                   format("cuda %s: first_position %d is negative or T = %lld past the limits", op, first_position,
                          static_cast<long long>(T)));
    if (B * T == 0) return;
    launch_kernel(document_positions_kernel, blocks_for(B * T, kThreads), kThreads, 0, stream_,
                  positions.as<int32_t>(), starts.as<const int32_t>(), B * T, static_cast<int>(T), first_position);
}

}  // namespace mixgpt::cuda
