// RoPE inside the flash attention kernels (AttentionParams::rope_theta, kernels/ops.h), applied as
// q and k are loaded rather than by a kernel of its own: a separate kernel would write rotated
// copies of q and k (B,T,(H+Hkv)·hd) and read them back, a pass over most of qkv, where here the
// tiles already in shared memory are rotated in place. (Which is faster is for a GPU to say; the
// simulator measures no speed.)
//
// - rotate_rows: a tile staged by load_rows_async, rotated in shared memory at its rows' positions
//   and rounded back to T, before any ldmatrix reads it. Every query block rotates the key tiles
//   it reads (a tile is rotated once per block that loads it).
// - rotate_accumulator_back: the gradient rows a warp accumulated against rotated q or k (dQ, dK),
//   rotated back in registers before they are stored: column i and its partner i + hd/2 sit in
//   the same lane, in accumulator blocks j and j + hd/16.
//
// The table (kernels/rope_table.h): row p holds cos(p θ_i) for i in [0, hd/2), then sin(p θ_i).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/flash_mma.cuh"
#include "kernels/cuda/flash_tiles.cuh"

namespace mixgpt::cuda::flash {

// The two floats of a pair of T in one register (`low` from its low half).
template <typename T>
__device__ __forceinline__ void unpack_pair(uint32_t bits, float& low, float& high) {
    T pair[2];
    memcpy(static_cast<void*>(pair), &bits, sizeof(bits));
    low = to_float(pair[0]);
    high = to_float(pair[1]);
}

// Block-wide: tile rows [0, kRows), global rows first..first+kRows-1 (kHeadDim elements, the pitch
// of flash_tiles.cuh), rotated in place at positions first + row; rows at or past `count` (zero
// padding) are left. A thread rotates two adjacent columns of a row's low half with their partners
// in the high half, in 4-byte accesses: a warp covers 32 pairs, one row at head_dim 128; at 64 the
// 16 pairs of two rows 4 apart, whose words lie 4 · 36 = 144 words (16 banks) apart, where adjacent
// rows (36 words) would share 12 banks. The caller synchronizes before (the tile has landed) and
// after (the rotated tile is read by other warps).
template <int kRows, int kHeadDim, int kThreads, typename T>
__device__ __forceinline__ void rotate_rows(T* tile, const float* rope, int first, int count) {
    constexpr int kHalf = kHeadDim / 2, kPairs = kHalf / 2, kPitch = tile_pitch<kHeadDim>();
    static_assert(kPairs == 16 || kPairs == 32, "head_dim 64 or 128");
    static_assert(kRows % 8 == 0 && kRows * kPairs % kThreads == 0, "whole warps of work per thread");
#pragma unroll
    for (int e = threadIdx.x; e < kRows * kPairs; e += kThreads) {
        const int slot = e / kWarpSize, lane = e % kWarpSize;  // a warp's 32 pairs
        const int row = kPairs == 32 ? slot : slot / 4 * 8 + slot % 4 + lane / 16 * 4;
        const int column = 2 * (lane % kPairs);
        if (first + row >= count) continue;
        const float* angles = rope + int64_t{first + row} * kHeadDim;
        const float2 cosines = *reinterpret_cast<const float2*>(angles + column);
        const float2 sines = *reinterpret_cast<const float2*>(angles + kHalf + column);
        const SharedPointer<uint32_t> low =
            shared_pointer(reinterpret_cast<uint32_t*>(tile + row * kPitch + column));
        const SharedPointer<uint32_t> high =
            shared_pointer(reinterpret_cast<uint32_t*>(tile + row * kPitch + kHalf + column));
        float x0, x1, y0, y1;
        unpack_pair<T>(*low, x0, x1);
        unpack_pair<T>(*high, y0, y1);
        *low = pack_pair<T>(x0 * cosines.x - y0 * sines.x, x1 * cosines.y - y1 * sines.y);
        *high = pack_pair<T>(y0 * cosines.x + x0 * sines.x, y1 * cosines.y + x1 * sines.y);
    }
}

// One warp: the accumulator rows c (16 rows from first_row, kHeadDim columns: the gradient with
// respect to rotated values) rotated back, (x, y) -> (x cos + y sin, y cos - x sin), at positions
// first_row + row; rows at or past `count` are left.
template <int kHeadDim>
__device__ __forceinline__ void rotate_accumulator_back(float (&c)[kHeadDim / 8][4], const float* rope,
                                                        int first_row, int count, int lane) {
    constexpr int kHalf = kHeadDim / 2, kHalfBlocks = kHeadDim / 16;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int position = first_row + accumulator_row(lane, i);
        if (position >= count) continue;
        const float* angles = rope + int64_t{position} * kHeadDim;
#pragma unroll
        for (int j = 0; j < kHalfBlocks; ++j) {
            const int column = 8 * j + accumulator_column(lane, i);
            const float cosine = angles[column], sine = angles[kHalf + column];
            const float x = c[j][i], y = c[j + kHalfBlocks][i];
            c[j][i] = x * cosine + y * sine;
            c[j + kHalfBlocks][i] = y * cosine - x * sine;
        }
    }
}

}  // namespace mixgpt::cuda::flash
