// The FP8 path waits for nothing on the host: two steps of a forward FP8 product (quantize both
// operands with the device's scales while recording their amax, the product with the scale
// inverses, the delayed-scaling update) enqueued back to back are one run of computations on the
// simulator (tests/cuda_sim/runtime.h: a host wait in between would make two), and allocate
// nothing once the buffers and the cuBLASLt workspace exist.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/cuda_check.h"
#include "kernels/cuda/cublaslt_matmul.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/fp8_cast.h"
#include "kernels/cuda/fp8_scaling.h"
#include "tests/cuda_sim/runtime.h"
#include "tests/gpu/gpu_test_support.h"
#include "kernels/fp8_scaling.h"

namespace mixgpt {
namespace {

TEST(SimFp8Step, ScalesAreUpdatedAndUsedWithoutAHostWait) {
    MIXGPT_FP8_GPU_OR_SKIP();
    const int64_t M = 32, N = 48, K = 64;
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    {
        cuda::DeviceAllocator allocator(stream);
        const Fp8ScalingConfig config{Fp8Scaling::delayed, 16, AmaxCompute::max, 0};
        const Fp8ScalingState initial(2, Fp8Format::e4m3, config);
        const Buffer values = allocator.allocate(initial.flat().size() * sizeof(float));
        const Buffer saturated = allocator.allocate(2 * sizeof(unsigned long long));
        const Buffer x = allocator.allocate(M * K * 2), w = allocator.allocate(N * K * 2);  // bf16, zeros
        const Buffer x_codes = allocator.allocate(M * K), w_codes = allocator.allocate(N * K);
        const Buffer out = allocator.allocate(M * N * 2);
        const Buffer scale_inverses[2] = {allocator.allocate(sizeof(float)), allocator.allocate(sizeof(float))};
        CUDA_CHECK(cudaMemcpyAsync(values.data(), initial.flat().data(), values.bytes(),
                                   cudaMemcpyHostToDevice, stream));
        const cuda::Fp8ScalingDevice state{values.as<float>(), saturated.as<unsigned long long>(), 2,
                                           Fp8Format::e4m3, config};
        cuda::LtMatmulRunner runner(allocator, stream);
        const auto quantize = [&](const Buffer& in, int64_t rows, int tensor, const Buffer& codes) {
            cuda::Fp8QuantizeParams params;
            params.in = in.data();
            params.rows = rows;
            params.cols = K;
            params.scale = state.scale(tensor);
            params.codes = codes.as<uint8_t>();
            params.amax = state.amax_slot(tensor);
            params.saturated = state.saturated + tensor;
            params.scale_inverse = state.scale_inverse(tensor);
            params.gemm_scale_inverse = scale_inverses[tensor].as<float>();
            cuda::fp8_quantize(params, stream);
        };
        cuda::Fp8Gemm gemm;
        gemm.a = x_codes.as<uint8_t>();
        gemm.a_scale_inverse = scale_inverses[0].as<float>();
        gemm.b = w_codes.as<uint8_t>();
        gemm.b_scale_inverse = scale_inverses[1].as<float>();
        gemm.out = out.data();
        gemm.M = M;
        gemm.N = N;
        gemm.K = K;
        const auto step = [&] {
            quantize(x, M, 0, x_codes);
            quantize(w, N, 1, w_codes);
            cuda::run_fp8_gemm(runner, gemm);
            cuda::fp8_update_delayed(state, stream);
        };
        step();  // plans the product
        CUDA_CHECK(cudaStreamSynchronize(stream));
        const cuda_sim::RuntimeCounters before = cuda_sim::runtime_counters();
        step();
        step();
        CUDA_CHECK(cudaStreamSynchronize(stream));
        const cuda_sim::RuntimeCounters after = cuda_sim::runtime_counters();
        EXPECT_EQ(after.compute_runs - before.compute_runs, 1u);
        EXPECT_EQ(after.kernel_launches - before.kernel_launches, 6u);
        EXPECT_EQ(after.matmuls - before.matmuls, 2u);
        EXPECT_EQ(after.device_allocations, before.device_allocations);
        EXPECT_EQ(after.matmul_plans, before.matmul_plans);
    }
    CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace mixgpt
