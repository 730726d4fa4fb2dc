// FP8 quantization (fp8_cast.h): codes, their transpose, amax and saturation count in one pass.
//
// A block walks tiles of 32 rows x 64 columns (grid-stride, at most kMaxBlocks blocks). A warp
// converts one tile row: each lane a pair of neighbouring columns, with one cvt.x2, written as a
// 2-byte store. For the transpose the codes also go to a shared tile (rows 68 bytes apart), and the
// warps then read it down its columns, a lane taking two neighbouring rows of one column (a half
// warp per column), and write those pairs to the transposed copy; the two reads of a pair hit
// distinct banks across the half warp (row r at word 17 r + j / 4). amax and the count are
// reduced per warp by shuffles, per block through shared memory, then added to the device totals
// with one integer atomic each per block: max of non-negative float bits and a 64-bit sum, both
// exact, so the totals do not depend on the order the blocks finish in.
#include <algorithm>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/fp8_cast.h"

namespace mixgpt::cuda {
namespace {

constexpr int kTileRows = 32;
constexpr int kTileColumns = 64;
constexpr int kThreadsX = kWarpSize;  // a lane per column pair
constexpr int kThreadsY = 8;          // warps, each taking every 8th row of the tile
constexpr int kThreads = kThreadsX * kThreadsY;
constexpr int kTilePitch = kTileColumns + 4;  // bytes per row of the shared code tile
constexpr int kTileBytes = kTileRows * kTilePitch;
constexpr int kMaxBlocks = 1024;
constexpr int kAmaxThreads = 256;
// Dynamic shared memory: the quantization's code tile, then a max and a count per warp; the amax
// pass's max and (unused) count per warp.
constexpr size_t kQuantizeSharedBytes = kTileBytes + 2 * kThreadsY * sizeof(float);
constexpr size_t kAmaxSharedBytes = 2 * (kAmaxThreads / kWarpSize) * sizeof(float);
static_assert(kTileColumns == 2 * kThreadsX, "a lane converts one column pair of a tile row");
static_assert(kTileBytes % 4 == 0, "the per-warp partials follow the tile, 4-byte aligned");

// FP8 codes of two fp32 values, `low`'s in the low byte: the conversion instruction, whose first
// source goes to the high byte (device_primitives.cuh; the simulator's: tests/cuda_sim/).
template <Fp8Format F>
__device__ __forceinline__ uint32_t fp8_pair(float low, float high) {
    return convert_to_fp8x2<F>(high, low);
}

// p[0] = the pair's low byte and, when `both`, p[1] = its high byte: one 2-byte store when aligned.
__device__ __forceinline__ void store_pair(uint8_t* p, uint32_t pair, bool both, bool aligned) {
    if (both && aligned) {
        *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(pair);
        return;
    }
    p[0] = static_cast<uint8_t>(pair);
    if (both) p[1] = static_cast<uint8_t>(pair >> 8);
}

__device__ __forceinline__ unsigned warp_sum_unsigned(unsigned value) {
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        value += __shfl_xor_sync(kFullMask, value, offset);
    return value;
}

// Block (kThreadsY warps) totals of amax and count into the device's, by thread (0, 0).
__device__ __forceinline__ void add_block_totals(float amax, unsigned saturated, SharedPointer<float> amaxes,
                                                 SharedPointer<unsigned> counts, int warps, float* total_amax,
                                                 unsigned long long* total_saturated) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x + threadIdx.y * blockDim.x) / kWarpSize;
    amax = warp_max(amax);
    saturated = warp_sum_unsigned(saturated);
    if (lane == 0) {
        amaxes[warp] = amax;
        counts[warp] = saturated;
    }
    __syncthreads();
    if (warp != 0) return;
    amax = lane < warps ? static_cast<float>(amaxes[lane]) : 0.f;
    saturated = lane < warps ? static_cast<unsigned>(counts[lane]) : 0u;
    amax = warp_max(amax);
    saturated = warp_sum_unsigned(saturated);
    if (lane != 0) return;
    // amax >= +0 and never NaN (fmaxf from 0 skips NaN): its bits order as its values.
    if (total_amax != nullptr) atomicMax(reinterpret_cast<unsigned*>(total_amax), __float_as_uint(amax));
    if (total_saturated != nullptr) atomicAdd(total_saturated, static_cast<unsigned long long>(saturated));
}

template <typename T, Fp8Format F>
__global__ void __launch_bounds__(kThreads) fp8_quantize_kernel(Fp8QuantizeParams p) {
    declare_launch_limits<kThreads, kQuantizeSharedBytes>();
    const SharedPointer<uint8_t> tile = dynamic_shared_memory<uint8_t>();  // (kTileRows, kTilePitch)
    const SharedPointer<float> amaxes = dynamic_shared_memory<float>() + kTileBytes / 4;  // (kThreadsY)
    const SharedPointer<unsigned> counts = dynamic_shared_memory<unsigned>() + kTileBytes / 4 + kThreadsY;
    const T* in = static_cast<const T*>(p.in);
    const float scale = *p.scale;
    constexpr float kMax = fp8_max(F);
    const int64_t tiles_across = (p.cols + kTileColumns - 1) / kTileColumns;
    const int64_t tiles = tiles_across * ((p.rows + kTileRows - 1) / kTileRows);
    const bool rows_aligned = p.cols % 2 == 0 && reinterpret_cast<uintptr_t>(p.codes) % 2 == 0;
    const bool columns_aligned = p.rows % 2 == 0 && reinterpret_cast<uintptr_t>(p.codes_transposed) % 2 == 0;
    const int lane = static_cast<int>(threadIdx.x), warp = static_cast<int>(threadIdx.y);
    if (p.gemm_scale_inverse != nullptr && blockIdx.x == 0 && lane == 0 && warp == 0)
        *p.gemm_scale_inverse = *p.scale_inverse;
    float amax = 0.f;
    unsigned saturated = 0;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t row0 = t / tiles_across * kTileRows, col0 = t % tiles_across * kTileColumns;
        const int64_t col = col0 + 2 * lane;
        for (int r = warp; r < kTileRows; r += kThreadsY) {
            const int64_t row = row0 + r;
            if (row >= p.rows || col >= p.cols) continue;
            const bool both = col + 1 < p.cols;
            const T* source = in + row * p.cols + col;
            const float x0 = to_float(source[0]);
            const float x1 = both ? to_float(source[1]) : 0.f;
            amax = fmaxf(amax, fmaxf(fabsf(x0), fabsf(x1)));
            const float v0 = x0 * scale, v1 = x1 * scale;
            saturated += (fabsf(v0) > kMax ? 1u : 0u) + (both && fabsf(v1) > kMax ? 1u : 0u);
            const uint32_t pair = fp8_pair<F>(v0, v1);
            store_pair(p.codes + row * p.cols + col, pair, both, rows_aligned);
            if (p.codes_transposed != nullptr) {
                tile[r * kTilePitch + 2 * lane] = static_cast<uint8_t>(pair);
                tile[r * kTilePitch + 2 * lane + 1] = static_cast<uint8_t>(pair >> 8);
            }
        }
        if (p.codes_transposed == nullptr) continue;
        __syncthreads();
        const int row_pair = lane % 16;  // rows 2 row_pair, 2 row_pair + 1 of the tile
        for (int j = 2 * warp + lane / 16; j < kTileColumns; j += 2 * kThreadsY) {
            const int64_t out_row = col0 + j, out_col = row0 + 2 * row_pair;
            if (out_row >= p.cols || out_col >= p.rows) continue;
            const bool both = out_col + 1 < p.rows;
            uint32_t pair = tile[2 * row_pair * kTilePitch + j];
            if (both) pair |= static_cast<uint32_t>(tile[(2 * row_pair + 1) * kTilePitch + j]) << 8;
            store_pair(p.codes_transposed + out_row * p.rows + out_col, pair, both, columns_aligned);
        }
        __syncthreads();  // the next tile overwrites the shared codes
    }
    add_block_totals(amax, saturated, amaxes, counts, kThreadsY, p.amax, p.saturated);
}

template <typename T>
__global__ void __launch_bounds__(kAmaxThreads) fp8_amax_kernel(const T* in, int64_t count, float* total) {
    declare_launch_limits<kAmaxThreads, kAmaxSharedBytes>();
    const SharedPointer<float> amaxes = dynamic_shared_memory<float>();  // (warps)
    const SharedPointer<unsigned> unused = dynamic_shared_memory<unsigned>() + kAmaxThreads / kWarpSize;
    float amax = 0.f;
    const int64_t stride = int64_t{gridDim.x} * blockDim.x;
    for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += stride)
        amax = fmaxf(amax, fabsf(to_float(in[i])));
    add_block_totals(amax, 0u, amaxes, unused, kAmaxThreads / kWarpSize, total, nullptr);
}

bool is_float_dtype(DType dtype) {
    return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
}

template <typename T>
void launch_quantize(const Fp8QuantizeParams& p, cudaStream_t stream) {
    const int64_t tiles =
        ((p.rows + kTileRows - 1) / kTileRows) * ((p.cols + kTileColumns - 1) / kTileColumns);
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles, kMaxBlocks)));
    const dim3 block(kThreadsX, kThreadsY);
    if (p.format == Fp8Format::e4m3)
        launch_kernel(fp8_quantize_kernel<T, Fp8Format::e4m3>, grid, block, kQuantizeSharedBytes, stream, p);
    else
        launch_kernel(fp8_quantize_kernel<T, Fp8Format::e5m2>, grid, block, kQuantizeSharedBytes, stream, p);
}

}  // namespace

void fp8_quantize(const Fp8QuantizeParams& p, cudaStream_t stream) {
    MIXGPT_REQUIRE(is_float_dtype(p.in_dtype), std::string("cuda fp8_quantize: in is ") +
                                                   dtype_name(p.in_dtype) + ", expected fp32, bf16 or fp16");
    MIXGPT_REQUIRE(p.rows >= 0 && p.cols >= 0, "cuda fp8_quantize: negative shape");
    if (p.rows == 0 || p.cols == 0) return;
    MIXGPT_REQUIRE(p.in != nullptr && p.codes != nullptr && p.scale != nullptr,
                   "cuda fp8_quantize: in, codes and scale must be device pointers, not null");
    MIXGPT_REQUIRE((p.scale_inverse == nullptr) == (p.gemm_scale_inverse == nullptr),
                   "cuda fp8_quantize: scale_inverse and gemm_scale_inverse go together");
    MIXGPT_REQUIRE(reinterpret_cast<uintptr_t>(p.gemm_scale_inverse) % 16 == 0,
                   "cuda fp8_quantize: gemm_scale_inverse must be 16-byte aligned (cuBLASLt's FP8 scales)");
    dispatch_dtype(p.in_dtype, [&](auto tag) { launch_quantize<decltype(tag)>(p, stream); });
}

void fp8_amax(const void* in, DType in_dtype, int64_t count, float* amax, cudaStream_t stream) {
    MIXGPT_REQUIRE(is_float_dtype(in_dtype), std::string("cuda fp8_amax: in is ") + dtype_name(in_dtype) +
                                                 ", expected fp32, bf16 or fp16");
    if (count <= 0) return;
    MIXGPT_REQUIRE(in != nullptr && amax != nullptr,
                   "cuda fp8_amax: in and amax must be device pointers, not null");
    const unsigned blocks =
        static_cast<unsigned>(std::min<int64_t>(blocks_for(count, kAmaxThreads), kMaxBlocks));
    dispatch_dtype(in_dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_kernel(fp8_amax_kernel<T>, blocks, kAmaxThreads, kAmaxSharedBytes, stream,
                      static_cast<const T*>(in), count, amax);
    });
}

}  // namespace mixgpt::cuda
