// Shared-memory tiles and the warp-level products of the flash attention kernels.
//
// A tile is rows of head_dim elements in shared memory, kPitch = head_dim + 8 elements
// apart: the 16-byte pad shifts each row by 4 banks, so the 8 row addresses of an ldmatrix
// phase, and the 16-byte cp.async writes, fall on distinct banks.
//
// Every product is one warp's: 16 rows of a left operand against a whole tile, fp32
// accumulators in the mma C layout (flash_mma.cuh), `c[j]` holding columns 8j..8j+7:
//   mma_rows_by_tile_t:  c (16 x N) += A (16 x K) · Bt^T, A and Bt rows in shared memory
//                        (S = Q K^T, dP = dO V^T, and their transposes in the key-side backward)
//   mma_acc_by_tile:     c (16 x N) += P (16 x K) · B, P in accumulator registers rounded to the
//                        input type, B (K x N) rows in shared memory (O += P V, dV += P^T dO, ...)
#pragma once

#include <cstdint>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/flash_mma.cuh"

namespace mixgpt::cuda::flash {

constexpr int kWarpRows = 16;  // rows of the left operand per warp (mma's m)

template <int kHeadDim>
constexpr int tile_pitch() {
    return kHeadDim + 8;
}

// Rows of a warp's accumulator element i (0..3) and its column within an 8-column block.
__device__ __forceinline__ int accumulator_row(int lane, int i) { return lane / 4 + 8 * (i / 2); }
__device__ __forceinline__ int accumulator_column(int lane, int i) { return 2 * (lane % 4) + (i & 1); }

// Block-wide: tile rows [0, kRows) = global rows first..first+kRows-1 (kHeadDim elements,
// `row_stride` apart), asynchronously; rows at or past `count` are zero-filled.
template <int kRows, int kHeadDim, int kThreads, typename T>
__device__ __forceinline__ void load_rows_async(T* tile, const T* global, int64_t row_stride, int first,
                                                int count) {
    constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
    constexpr int kPitch = tile_pitch<kHeadDim>();
    static_assert(kRows * kChunks % kThreads == 0, "whole copies per thread");
#pragma unroll
    for (int e = threadIdx.x; e < kRows * kChunks; e += kThreads) {
        const int row = e / kChunks;
        const int chunk = e % kChunks;
        const bool valid = first + row < count;
        const T* source = global + (valid ? int64_t{first + row} * row_stride : 0) + chunk * 8;
        copy_async_16(tile + row * kPitch + chunk * 8, source, valid);
    }
}

// Block-wide: values[0, kCount) = global[first..first+kCount-1], zero at or past `count`.
template <int kCount>
__device__ __forceinline__ void load_values_async(float* values, const float* global, int first, int count) {
    for (int e = threadIdx.x; e < kCount; e += blockDim.x) {
        const bool valid = first + e < count;
        copy_async_4(values + e, global + (valid ? first + e : 0), valid);
    }
}

// c (16 x kN) += A (16 x kK) · Bt^T with A[m][k] = a[m * pitch + k] and Bt[n][k] = bt[n * pitch + k].
template <typename T, int kN, int kK, int kPitch>
__device__ __forceinline__ void mma_rows_by_tile_t(float (&c)[kN / 8][4], const T* a, const T* bt, int lane) {
    static_assert(kN % 16 == 0 && kK % 16 == 0, "16-element steps");
#pragma unroll
    for (int k = 0; k < kK; k += 16) {
        uint32_t a_fragment[4];
        load_matrix_x4(a_fragment, a + (lane % 16) * kPitch + k + (lane / 16) * 8);
#pragma unroll
        for (int n = 0; n < kN; n += 16) {
            // Tiles: (n..n+7, k..k+7), (n..n+7, k+8..), (n+8.., k..), (n+8.., k+8..) of Bt.
            uint32_t b[4];
            load_matrix_x4(b, bt + (n + (lane / 16) * 8 + lane % 8) * kPitch + k + ((lane / 8) % 2) * 8);
            mma_16x8x16<T>(c[n / 8], a_fragment, b[0], b[1]);
            mma_16x8x16<T>(c[n / 8 + 1], a_fragment, b[2], b[3]);
        }
    }
}

// c (16 x kN) += P (16 x kK) · B with P in accumulator layout (p[j] = columns 8j..8j+7) and
// B[k][n] = b[k * pitch + n]. P is rounded to T; with kSplit it enters as two parts, P ≈ hi + lo
// with hi = P rounded to T and lo = (P - hi) rounded to T, one more product per fragment for
// about 8 more bits of P (the backward's dS, whose rounding would otherwise rival the output's).
template <typename T, int kN, int kK, int kPitch, bool kSplit = false>
__device__ __forceinline__ void mma_acc_by_tile(float (&c)[kN / 8][4], const float (&p)[kK / 8][4],
                                                const T* b, int lane) {
    static_assert(kN % 16 == 0 && kK % 16 == 0, "16-element steps");
#pragma unroll
    for (int k = 0; k < kK; k += 16) {
        // Two accumulator blocks of 8 columns are one A fragment of 16: registers hold the
        // pairs (p[k/8][0..1]), (p[k/8][2..3]), (p[k/8+1][0..1]), (p[k/8+1][2..3]).
        uint32_t high[4], low[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const float first = p[k / 8 + r / 2][2 * (r % 2)], second = p[k / 8 + r / 2][2 * (r % 2) + 1];
            high[r] = pack_pair<T>(first, second);
            if constexpr (kSplit)
                low[r] = pack_pair<T>(first - rounded<T>(first), second - rounded<T>(second));
        }
#pragma unroll
        for (int n = 0; n < kN; n += 16) {
            // Transposed tiles: (k..k+7, n..n+7), (k+8.., n..), (k.., n+8..), (k+8.., n+8..) of B.
            uint32_t b_fragment[4];
            load_matrix_x4_transposed(b_fragment, b + (k + lane % 16) * kPitch + n + (lane / 16) * 8);
            mma_16x8x16<T>(c[n / 8], high, b_fragment[0], b_fragment[1]);
            mma_16x8x16<T>(c[n / 8 + 1], high, b_fragment[2], b_fragment[3]);
            if constexpr (kSplit) {
                mma_16x8x16<T>(c[n / 8], low, b_fragment[0], b_fragment[1]);
                mma_16x8x16<T>(c[n / 8 + 1], low, b_fragment[2], b_fragment[3]);
            }
        }
    }
}

// One warp: global rows first_row..first_row+15 (those below `count`), kHeadDim elements at
// `global + row * row_stride`, = the accumulator rows c times row_scale (the lane's two rows),
// rounded to T. Goes through `stage`, 16 tile rows only this warp uses, for 16-byte stores.
template <typename T, int kHeadDim>
__device__ __forceinline__ void store_rows(const float (&c)[kHeadDim / 8][4], const float (&row_scale)[2],
                                           T* stage, T* global, int64_t row_stride, int first_row, int count,
                                           int lane) {
    constexpr int kPitch = tile_pitch<kHeadDim>();
    constexpr int kChunks = kHeadDim / 8;
    __syncwarp();  // the warp's last reads of `stage` are done
#pragma unroll
    for (int j = 0; j < kHeadDim / 8; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = accumulator_row(lane, 2 * half);
            const uint32_t pair =
                pack_pair<T>(c[j][2 * half] * row_scale[half], c[j][2 * half + 1] * row_scale[half]);
            *shared_pointer(reinterpret_cast<uint32_t*>(stage + row * kPitch + 8 * j +
                                                        accumulator_column(lane, 0))) = pair;
        }
    __syncwarp();
#pragma unroll
    for (int e = lane; e < kWarpRows * kChunks; e += kWarpSize) {
        const int row = e / kChunks;
        const int chunk = e % kChunks;
        if (first_row + row < count)
            *reinterpret_cast<uint4*>(global + int64_t{first_row + row} * row_stride + chunk * 8) =
                *shared_pointer(reinterpret_cast<const uint4*>(stage + row * kPitch + chunk * 8));
    }
}

}  // namespace mixgpt::cuda::flash
