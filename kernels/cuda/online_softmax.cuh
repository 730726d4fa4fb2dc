// A softmax denominator kept online, (max, sum of exp(x - max)), and its combination across a warp
// and a block in a fixed tree (deterministic), by a block reduction of any value and warp
// reduction: the fused classifier's rows and the fp32 attention's score rows and sums
// (classifier.cu, attention_products.cu).
#pragma once

#include <cmath>

#include "kernels/cuda/common.cuh"

namespace mixgpt::cuda {

// A running softmax denominator: sum of exp(x - max) over the values seen.
struct OnlineSum {
    float max = -INFINITY;
    float sum = 0.f;
};

// Adds one value: one exponential, rescaling the sum when the maximum grows.
__device__ __forceinline__ void accumulate(OnlineSum& s, float x) {
    if (x > s.max) {
        s.sum = s.sum * expf(s.max - x) + 1.f;
        s.max = x;
    } else if (x != -INFINITY) {
        s.sum += expf(x - s.max);
    }
}

__device__ __forceinline__ OnlineSum combine(OnlineSum a, OnlineSum b) {
    const float max = fmaxf(a.max, b.max);
    if (max == -INFINITY) return a;
    return {max, a.sum * expf(a.max - max) + b.sum * expf(b.max - max)};
}

__device__ __forceinline__ OnlineSum warp_combine(OnlineSum value) {
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        const OnlineSum other{__shfl_xor_sync(kFullMask, value.max, offset),
                              __shfl_xor_sync(kFullMask, value.sum, offset)};
        value = combine(value, other);
    }
    return value;
}

// The block's reduction of `value`: warp_reduce (a warp-wide reduction every lane returns) over
// each warp, then over the warps' results, a warp's lanes past the block's warps contributing
// `identity`; the same in every thread, in a fixed tree. Blocks of at most kThreads threads.
template <int kThreads, typename V, typename WarpReduce>
__device__ V block_reduce(V value, V identity, WarpReduce warp_reduce) {
    __shared__ V per_warp_array[kThreads / kWarpSize];
    __shared__ V result_value;
    const SharedPointer<V> per_warp = shared_pointer(per_warp_array);
    const SharedPointer<V> result = shared_pointer(&result_value);
    const int warp = threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    value = warp_reduce(value);
    if (lane == 0) per_warp[warp] = value;
    __syncthreads();
    if (warp == 0) {
        const int warps = blockDim.x / kWarpSize;
        value = warp_reduce(lane < warps ? static_cast<V>(per_warp[lane]) : identity);
        if (lane == 0) *result = value;
    }
    __syncthreads();
    return *result;
}

// warp_combine as block_reduce's warp reduction.
struct WarpCombine {
    __device__ OnlineSum operator()(OnlineSum value) const { return warp_combine(value); }
};

// The block's combined value, the same in every thread; blocks of at most kThreads threads.
template <int kThreads>
__device__ OnlineSum block_combine(OnlineSum value) {
    return block_reduce<kThreads>(value, OnlineSum{}, WarpCombine{});
}

}  // namespace mixgpt::cuda
