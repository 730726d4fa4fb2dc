// Device discovery and --device auto: the runtime's own reason when no device is usable (a
// failure forced through the discovery's seam), and auto's choice both ways: CUDA where a device
// takes work (the simulator has one), the CPU with the reason where none does (this build
// without a driver, a build without CUDA, a forced failure).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "kernels/device_choice.h"
#include "kernels/ops.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

// The runtime as it answers on a host whose driver supports CUDA 12.4 only, or whose devices
// are all taken, or with none visible.
CudaDiscovery discover_with_count_error(int error, int driver_version = 12040) {
    CudaRuntimeQueries queries;
    queries.device_count = [error](int* count) {
        *count = 0;
        return error;
    };
    queries.driver_version = [driver_version](int* version) {
        *version = driver_version;
        return 0;
    };
    return discover_cuda(queries);
}

TEST(GpuDiscovery, ForcedInsufficientDriverNamesBothVersionsAndAutoFallsBackToTheCpu) {
    const CudaDiscovery found = discover_with_count_error(kCudaErrorInsufficientDriver);
    EXPECT_TRUE(found.devices.empty());
    if (!built_with_cuda()) {
        EXPECT_NE(found.failure.find("built without CUDA"), std::string::npos) << found.failure;
        return;
    }
    EXPECT_EQ(found.failure, "the NVIDIA driver supports CUDA 12.4, older than the CUDA " +
                                 cuda_version_text(found.runtime_version) +
                                 " runtime this mixgpt was built with: update the driver "
                                 "(cudaErrorInsufficientDriver)");
    const DeviceChoice choice = choose_device("auto", 0, found);
    EXPECT_EQ(choice.device, "cpu");
    EXPECT_EQ(choice.reason, "auto: no usable CUDA device: " + found.failure);
}

TEST(GpuDiscovery, ForcedNoDriverNoDeviceAndBusyDevicesEachSayWhy) {
    if (!built_with_cuda()) GTEST_SKIP() << "a build without CUDA discovers nothing";
    EXPECT_NE(discover_with_count_error(kCudaErrorInsufficientDriver, 0).failure.find("no NVIDIA driver"),
              std::string::npos);
    const std::string no_device = discover_with_count_error(kCudaErrorNoDevice).failure;
    EXPECT_NE(no_device.find("the NVIDIA driver (CUDA 12.4) sees no CUDA device (cudaErrorNoDevice"),
              std::string::npos)
        << no_device;
    const std::string busy = discover_with_count_error(kCudaErrorDevicesUnavailable).failure;
    EXPECT_NE(busy.find("busy or prohibited (cudaErrorDevicesUnavailable"), std::string::npos) << busy;
}

TEST(GpuDeviceChoice, AutoTakesAListedDeviceUnlessItRefusesWork) {
    CudaDiscovery found;
    found.built_with_cuda = true;
    found.devices.push_back({0, "NVIDIA H100 80GB HBM3", 9, 0, uint64_t{80} << 30, 132});
    const DeviceChoice taken = choose_device("auto", 0, found, [](int) { return std::string(); });
    EXPECT_EQ(taken.device, "cuda");
    EXPECT_EQ(taken.reason, "auto: cuda:0 is NVIDIA H100 80GB HBM3, compute capability 9.0");
    const DeviceChoice refused =
        choose_device("auto", 0, found, [](int) { return std::string("cuda:0 is busy"); });
    EXPECT_EQ(refused.device, "cpu");
    EXPECT_EQ(refused.reason, "auto: no usable CUDA device: cuda:0 is busy");
    EXPECT_EQ(choose_device("cpu", 0, found).device, "cpu");
    EXPECT_EQ(choose_device("cuda", 0, CudaDiscovery{}).device,
              "cuda");  // asked for: its backend says why not
    EXPECT_EQ(test::error_of([&] { choose_device("gpu", 0, found); }),
              "device: 'gpu' is not auto, cpu or cuda");
}

// What auto decides here: on the simulator (one device) the CUDA backend; in a build without
// CUDA or on a host without a usable GPU the CPU one, and asking for CUDA there says why not.
TEST(GpuDeviceChoice, AutoOnThisHostMatchesItsDevices) {
    const CudaDiscovery found = discover_cuda();
    const std::unique_ptr<Backend> backend = make_backend({"auto", 0, Precision::fp32, 0});
    if (found.devices.empty()) {
        EXPECT_EQ(backend->name().rfind("cpu", 0), 0u) << backend->name();
        EXPECT_EQ(test::error_of([] {
                      make_backend({"cuda", 0, Precision::fp32, 0});
                  }),
                  "device cuda: " + found.failure);
    } else {
        EXPECT_EQ(backend->name().rfind("cuda:0 (", 0), 0u) << backend->name();
    }
}

}  // namespace
}  // namespace mixgpt
