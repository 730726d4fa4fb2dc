// What the backward kernels of LayerNorm (layernorm.cu) and RMSNorm (rmsnorm.cu) share: the
// blocks and warps of a launch, whose warps keep per-warp column accumulators of the weight (and
// bias) gradients in shared memory, and where a column sits among a lane's accumulators.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/log.h"
#include "kernels/cuda/common.cuh"

namespace mixgpt::cuda {

constexpr size_t kNormDefaultSharedBytes = 48 * 1024;
constexpr int kNormBackwardMaxWarps = 8;

// Where the backward keeps column `column` of a row in a warp's accumulators: lane l holds
// columns l*N .. l*N + N-1 of each pass of 32N columns (its pack), element i in word
// (i + l*N/32) % N of them. For one i, lanes whose words l*N share a bank (l*N/32 differs
// between them) then differ in the rotation, so the warp's accesses take one wavefront; and
// 32 consecutive columns are 32 consecutive words, permuted, when the block sums the warps.
template <int N>
__device__ __forceinline__ int accumulator_index(int column) {
    const int lane = column / N % kWarpSize;
    return column - column % N + (column + lane * N / kWarpSize) % N;
}

// Blocks of a backward kernel and their warps: as many warps per block as the default 48 KiB of
// shared memory holds (one warp may opt into more).
struct NormBackwardLayout {
    int blocks = 0;
    int warps = 0;
    size_t shared_bytes = 0;
};

// `accumulators` floats per column and warp (LayerNorm: dweight and dbias, 2; RMSNorm: 1).
inline NormBackwardLayout norm_backward_layout(const char* op, int64_t rows, int C, int accumulators,
                                               int multiprocessors, size_t shared_optin) {
    const size_t per_warp = static_cast<size_t>(accumulators) * C * sizeof(float);
    NormBackwardLayout layout;
    layout.warps =
        static_cast<int>(std::clamp<size_t>(kNormDefaultSharedBytes / per_warp, 1, kNormBackwardMaxWarps));
    layout.shared_bytes = per_warp * static_cast<size_t>(layout.warps);
    MIXGPT_REQUIRE(layout.shared_bytes <= shared_optin,
                   format("cuda %s: C = %d needs %zu bytes of shared memory per block, the device allows %zu",
                          op, C, layout.shared_bytes, shared_optin));
    layout.blocks =
        static_cast<int>(std::min<int64_t>(blocks_for(rows, layout.warps), 4 * int64_t{multiprocessors}));
    return layout;
}

}  // namespace mixgpt::cuda
