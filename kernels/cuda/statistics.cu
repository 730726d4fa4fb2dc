// tensor_statistics (kernels/ops.def): per-block partial statistics over a grid-strided share of
// the tensor, then one block combines the partials in block order, so the result depends on n
// only (not on timing). exponent_histogram: per-block counts in shared memory, added to the
// global ones (integers: any order gives the same counts). Only telemetry steps run them
// (train/telemetry.h).
#include <algorithm>

#include "core/log.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 256;  // fixed for a given n, so the combination order is too

// The block's sums of squares, small and non-finite counts and its amax, valid in thread 0;
// fixed order (warps by lane butterflies, then warp 0 over the warps).
__device__ TensorStatistics block_statistics(TensorStatistics s) {
    __shared__ double sums_array[3][kThreads / kWarpSize];
    __shared__ float amax_array[kThreads / kWarpSize];
    const SharedPointer<double> sums[3] = {shared_pointer(sums_array[0]), shared_pointer(sums_array[1]),
                                           shared_pointer(sums_array[2])};
    const SharedPointer<float> amaxes = shared_pointer(amax_array);
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const double values[3] = {warp_sum(s.sum_squares), warp_sum(s.small), warp_sum(s.non_finite)};
    const float amax = warp_max(static_cast<float>(s.amax));
    if (lane == 0) {
        for (int k = 0; k < 3; ++k) sums[k][warp] = values[k];
        amaxes[warp] = amax;
    }
    __syncthreads();
    TensorStatistics total;
    if (warp == 0) {
        const bool holds = lane < static_cast<int>(blockDim.x) / kWarpSize;
        total.sum_squares = warp_sum(holds ? sums[0][lane] : 0.0);
        total.small = warp_sum(holds ? sums[1][lane] : 0.0);
        total.non_finite = warp_sum(holds ? sums[2][lane] : 0.0);
        total.amax = warp_max(holds ? amaxes[lane] : 0.f);
    }
    return total;
}

// partials (gridDim.x): each block's statistics of its grid-strided share of x (n), minus
// reference (n) when it is not null.
template <typename T>
__global__ void statistics_partials_kernel(TensorStatistics* partials, const T* x, const float* reference, int64_t n,
                                           float small) {
    declare_launch_limits<kThreads>();
    TensorStatistics s;
    const int64_t stride = int64_t{gridDim.x} * blockDim.x;
    for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double value = reference != nullptr ? static_cast<double>(to_float(x[i])) - reference[i]
                                                  : static_cast<double>(to_float(x[i]));
        if (!isfinite(value)) {
            s.non_finite += 1;
            continue;
        }
        const double magnitude = fabs(value);
        s.sum_squares += value * value;
        s.amax = fmax(s.amax, magnitude);
        if (magnitude < small) s.small += 1;
    }
    s = block_statistics(s);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// One block: *statistics = the partials (count) combined.
__global__ void statistics_finish_kernel(TensorStatistics* statistics, const TensorStatistics* partials,
                                         int count) {
    declare_launch_limits<kThreads>();
    TensorStatistics s;
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        s.sum_squares += partials[i].sum_squares;
        s.amax = fmax(s.amax, partials[i].amax);
        s.small += partials[i].small;
        s.non_finite += partials[i].non_finite;
    }
    s = block_statistics(s);
    if (threadIdx.x == 0) *statistics = s;
}

// x's bin of kernels/ops.h's exponent bins, from its bits: a normal number's exponent field, a
// subnormal's leading mantissa bit.
__device__ __forceinline__ int exponent_bin(float x) {
    const unsigned bits = __float_as_uint(x);
    const unsigned field = (bits >> 23) & 0xffu;
    unsigned mantissa = bits & 0x7fffffu;
    if (field == 0xffu) return kExponentBins - 1;
    if (field == 0 && mantissa == 0) return 0;
    int exponent = static_cast<int>(field) - 127;
    if (field == 0) {
        for (exponent = -126; mantissa < 0x800000u; mantissa <<= 1) --exponent;
    }
    return 1 + exponent - kHistogramExponentMin;
}

// counts (kExponentBins) += the exponent bins of x (n): each block counts its grid-strided share
// in shared memory, then adds its nonzero bins.
template <typename T>
__global__ void exponent_histogram_kernel(unsigned long long* counts, const T* x, int64_t n) {
    declare_launch_limits<kThreads>();
    __shared__ unsigned bins_array[kExponentBins];
    const SharedPointer<unsigned> bins = shared_pointer(bins_array);
    for (int bin = threadIdx.x; bin < kExponentBins; bin += blockDim.x) bins[bin] = 0;
    __syncthreads();
    const int64_t stride = int64_t{gridDim.x} * blockDim.x;
    for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(bins + exponent_bin(to_float(x[i])), 1u);
    __syncthreads();
    for (int bin = threadIdx.x; bin < kExponentBins; bin += blockDim.x) {
        const unsigned count = bins[bin];
        if (count != 0) atomicAdd(counts + bin, static_cast<unsigned long long>(count));
    }
}

}  // namespace

void CudaBackend::exponent_histogram(uint64_t* counts, TensorView x) {
    MIXGPT_REQUIRE(counts != nullptr, "cuda exponent_histogram: counts is missing (null)");
    const int64_t n = x.numel();
    if (n == 0) return;
    // A block's share stays far below 2^32 elements for any tensor a GPU holds.
    const int blocks = static_cast<int>(std::clamp<int64_t>(blocks_for(n, kThreads), 1, kMaxBlocks));
    dispatch_dtype(x.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_kernel(exponent_histogram_kernel<T>, blocks, kThreads, 0, stream_,
                      reinterpret_cast<unsigned long long*>(counts), x.as<const T>(), n);
    });
}

void CudaBackend::tensor_statistics(TensorStatistics* statistics, TensorView x, TensorView reference, float small) {
    const char* op = "tensor_statistics";
    MIXGPT_REQUIRE(statistics != nullptr, "cuda tensor_statistics: statistics is missing (null)");
    const int64_t n = x.numel();
    if (reference.valid()) {
        expect_elements(op, "x", x, DType::f32, n);
        expect_elements(op, "reference", reference, DType::f32, n);
    }
    const int blocks = static_cast<int>(std::clamp<int64_t>(blocks_for(n, kThreads), 1, kMaxBlocks));
    auto* partials = static_cast<TensorStatistics*>(
        scratch_->get(ScratchSlot::statistics_partials, blocks * sizeof(TensorStatistics)));
    if (n == 0) {
        launch_kernel(statistics_finish_kernel, 1, kThreads, 0, stream_, statistics, partials, 0);
        return;
    }
    dispatch_dtype(x.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_kernel(statistics_partials_kernel<T>, blocks, kThreads, 0, stream_, partials, x.as<const T>(),
                      reference.valid() ? reference.as<const float>() : nullptr, n, small);
    });
    launch_kernel(statistics_finish_kernel, 1, kThreads, 0, stream_, statistics, partials, blocks);
}

}  // namespace mixgpt::cuda
