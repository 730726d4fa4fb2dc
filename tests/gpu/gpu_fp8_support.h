// What the FP8 GPU tests (test_gpu_fp8_*.cpp) share: a stream, device buffers from it and copies
// both ways. Unlike the rest of tests/gpu, these tests call the FP8 kernels directly
// (kernels/cuda/fp8_*.h, cublaslt_matmul.h) rather than through the op interface, so they use the
// CUDA runtime and are compiled in CUDA builds only (MIXGPT_WITH_CUDA).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "core/cuda_check.h"
#include "core/memory.h"
#include "kernels/cuda/device_memory.h"
#include "tests/gpu/gpu_test_support.h"

namespace mixgpt::gpu_test {

// A stream and the device allocator on it, created after the GPU gate.
class GpuFp8Test : public ::testing::Test {
protected:
    void SetUp() override {
        MIXGPT_GPU_OR_SKIP();
        CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        allocator = std::make_unique<cuda::DeviceAllocator>(stream);
        trace_.emplace(__FILE__, __LINE__, seed_note());
    }
    void TearDown() override {
        if (stream != nullptr) {
            EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
        }
    }

    // Device memory holding `values` (bytes copied as they are).
    template <typename T>
    Buffer upload(const std::vector<T>& values) {
        Buffer buffer = allocator->allocate(values.size() * sizeof(T));
        CUDA_CHECK(cudaMemcpyAsync(buffer.data(), values.data(), values.size() * sizeof(T),
                                   cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        return buffer;
    }
    // `count` elements of T from device memory, after the stream's work.
    template <typename T>
    std::vector<T> download(const void* device, size_t count) {
        std::vector<T> values(count);
        CUDA_CHECK(cudaStreamSynchronize(stream));
        CUDA_CHECK(cudaMemcpy(values.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
        return values;
    }
    // `bytes` of device memory, every byte `value`.
    Buffer filled(size_t bytes, unsigned char value) {
        Buffer buffer = allocator->allocate(bytes);
        CUDA_CHECK(cudaMemsetAsync(buffer.data(), value, bytes, stream));
        return buffer;
    }

    cudaStream_t stream = nullptr;
    std::unique_ptr<cuda::DeviceAllocator> allocator;

private:
    std::optional<::testing::ScopedTrace> trace_;
};

}  // namespace mixgpt::gpu_test
