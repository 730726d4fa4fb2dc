// The CUDA backend itself: device discovery (also checked on machines without a GPU),
// memory and transfers, peak-memory accounting, and argument checks that name the op.
#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"
#include "kernels/device_discovery.h"
#include "tests/gpu/gpu_test_support.h"

namespace mixgpt {
namespace {

// Runs everywhere: without a driver or GPU the count is 0 and asking for the backend is the
// runtime's reason (kernels/device_discovery.h), not a crash.
TEST(GpuAvailability, DeviceCountNeverThrowsAndNoDeviceIsAClearError) {
    int count = -1;
    EXPECT_NO_THROW(count = cuda_device_count());
    EXPECT_GE(count, 0);
    if (count > 0) return;
    try {
        make_backend({"cuda", 0, Precision::fp32, 0});
        ADD_FAILURE() << "make_backend(cuda) succeeded without a device";
    } catch (const Error& error) {
        EXPECT_EQ(std::string(error.what()), "device cuda: " + discover_cuda().failure);
    }
}

class GpuBackend : public ::testing::Test {
protected:
    void SetUp() override {
        MIXGPT_GPU_OR_SKIP();
        gpu = make_backend({"cuda", 0, Precision::bf16, 0});
    }
    std::unique_ptr<Backend> gpu;
};

TEST_F(GpuBackend, NameAndPrecision) {
    EXPECT_EQ(gpu->name().rfind("cuda:0 (", 0), 0u) << gpu->name();
    EXPECT_EQ(gpu->precision(), Precision::bf16);
    EXPECT_THROW(make_backend({"cuda", cuda_device_count(), Precision::fp32, 0}), Error);
}

TEST_F(GpuBackend, MemoryIsZeroFilledAndTransfersRoundTrip) {
    const size_t count = 3000000;  // above the bounce buffer: the synchronous path too
    for (size_t n : {size_t{1000}, count}) {
        Buffer device = gpu->allocate(n * sizeof(int32_t));
        EXPECT_EQ(device.kind(), MemoryKind::device);
        std::vector<int32_t> back(n, -1);
        gpu->copy_to_host(back.data(), device.data(), n * sizeof(int32_t));
        EXPECT_EQ(back, std::vector<int32_t>(n, 0));

        std::vector<int32_t> values(n);
        std::iota(values.begin(), values.end(), 7);
        gpu->copy_to_backend(device.data(), values.data(), n * sizeof(int32_t));
        values.assign(n, 0);  // the source may be reused as soon as the call returns
        Buffer other = gpu->allocate(n * sizeof(int32_t));
        gpu->copy_within(other.data(), device.data(), n * sizeof(int32_t));
        gpu->copy_to_host(back.data(), other.data(), n * sizeof(int32_t));
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], static_cast<int32_t>(i + 7)) << i;
        gpu->fill_zero(other.data(), n * sizeof(int32_t));
        gpu->copy_to_host(back.data(), other.data(), n * sizeof(int32_t));
        EXPECT_EQ(back, std::vector<int32_t>(n, 0));
    }
    Buffer staging = gpu->allocate_host_staging(4096);
    EXPECT_EQ(staging.kind(), MemoryKind::pinned_host);
    EXPECT_EQ(staging.as<char>()[4095], 0);
}

// Small uploads share one pinned bounce buffer and return before the GPU has read it: each must
// still arrive with its own data when several are issued with nothing waiting in between.
TEST_F(GpuBackend, ConsecutiveUploadsEachKeepTheirData) {
    const size_t n = 1000;
    std::vector<Buffer> devices;
    for (int upload = 0; upload < 3; ++upload) {
        devices.push_back(gpu->allocate(n * sizeof(int32_t)));
        const std::vector<int32_t> values(n, 100 + upload);
        gpu->copy_to_backend(devices.back().data(), values.data(), n * sizeof(int32_t));
    }
    for (int upload = 0; upload < 3; ++upload) {
        std::vector<int32_t> back(n, -1);
        gpu->copy_to_host(back.data(), devices[static_cast<size_t>(upload)].data(), n * sizeof(int32_t));
        EXPECT_EQ(back, std::vector<int32_t>(n, 100 + upload)) << "upload " << upload;
    }
}

TEST_F(GpuBackend, PeakMemoryCountsWhatWasHeldAtOnce) {
    const size_t start = gpu->peak_memory_bytes();  // the cuBLASLt workspace
    const size_t big = size_t{64} << 20;
    { Buffer a = gpu->allocate(big); }
    { Buffer b = gpu->allocate(big); }
    EXPECT_EQ(gpu->peak_memory_bytes(), start + big);
    Buffer c = gpu->allocate(big), d = gpu->allocate(big);
    EXPECT_EQ(gpu->peak_memory_bytes(), start + 2 * big);
}

TEST_F(GpuBackend, BadArgumentsAreRefusedWithTheOpNamed) {
    Buffer memory = gpu->allocate(1 << 16);
    auto* p = memory.data();
    const TensorView x(p, DType::bf16, {4, 8}), w8(p, DType::bf16, {8}), w7(p, DType::bf16, {7});
    const TensorView stats(p, DType::f32, {4}), stats3(p, DType::f32, {3}), fp32x(p, DType::f32, {4, 8});
    const auto expect_error = [](auto call, const std::string& text) {
        try {
            call();
            ADD_FAILURE() << "no error; expected one containing '" << text << "'";
        } catch (const Error& error) {
            EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
        }
    };
    expect_error([&] { gpu->layernorm_forward(x, stats, stats, x, w7, w7); }, "layernorm_forward: weight");
    expect_error([&] { gpu->layernorm_forward(x, stats3, stats, x, w8, w8); }, "layernorm_forward: mean");
    expect_error([&] { gpu->gelu_forward(x, fp32x); }, "gelu_forward: inp");
    expect_error(
        [&] {
            gpu->matmul_forward(x, TensorView(), x, TensorView(p, DType::bf16, {8, 7}), TensorView(),
                                MatmulEpilogue::none);
        },
        "matmul_forward: inp");
    expect_error(
        [&] {
            gpu->attention_forward(x, stats, TensorView(p, DType::bf16, {1, 4, 24}), multi_head_attention(3));
        },
        "attention_forward: out");
    expect_error([&] { gpu->grad_norm_squared(nullptr, fp32x); }, "grad_norm_squared: status");
    // Index tensors must be DType::i32: 4-byte float elements are refused.
    expect_error([&] { gpu->classifier(stats, TensorView(), x, stats, {8}, false, 1.f, nullptr); },
                 "classifier: targets is (4) fp32, expected 4 int32 indices");
    expect_error(
        [&] {
            gpu->embedding_forward(TensorView(p, DType::bf16, {1, 4, 8}), TensorView(p, DType::f32, {1, 4}),
                                   x, x, TensorView());
        },
        "embedding_forward: tokens is (1, 4) fp32, expected (1, 4) int32 indices");
}

}  // namespace
}  // namespace mixgpt
