#include "tests/gpu/gpu_test_support.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "kernels/device_discovery.h"
#include "tests/reference_f64.h"

namespace mixgpt::gpu_test {
namespace {

constexpr double kFp32Tolerance = 1e-5;  // the FP32 criterion of the issue

size_t element_count(std::initializer_list<int64_t> shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
}

}  // namespace

bool gpu_required() {
    const char* value = std::getenv("MIXGPT_REQUIRE_GPU");
    return value != nullptr && std::string(value) == "1";
}

uint32_t run_seed() {
    static const uint32_t seed = [] {
        if (const char* fixed = std::getenv("MIXGPT_TEST_SEED"))
            return static_cast<uint32_t>(std::strtoul(fixed, nullptr, 10));
        return static_cast<uint32_t>(std::chrono::system_clock::now().time_since_epoch().count());
    }();
    return seed;
}

std::string seed_note() {
    return "seed " + std::to_string(run_seed()) +
           " (rerun with MIXGPT_TEST_SEED=" + std::to_string(run_seed()) + ")";
}

TwinTensor::TwinTensor(Backend& cpu, Backend& gpu, DType dtype, std::initializer_list<int64_t> shape)
    : cpu_backend_(&cpu), gpu_backend_(&gpu) {
    const size_t bytes = element_count(shape) * dtype_size(dtype);
    cpu_buffer_ = cpu.allocate(bytes);
    gpu_buffer_ = gpu.allocate(bytes);
    cpu_view_ = TensorView(cpu_buffer_.data(), dtype, shape);
    gpu_view_ = TensorView(gpu_buffer_.data(), dtype, shape);
}

TwinTensor::TwinTensor(Backend& cpu, Backend& gpu, const std::vector<double>& values, DType dtype,
                       std::initializer_list<int64_t> shape)
    : TwinTensor(cpu, gpu, dtype, shape) {
    MIXGPT_REQUIRE(values.size() == element_count(shape), "TwinTensor: value count differs from the shape");
    const std::vector<float> narrow(values.begin(), values.end());
    std::vector<char> bytes(cpu_view_.bytes());
    convert_from_float(narrow.data(), bytes.data(), dtype, narrow.size());
    upload(bytes.data());
}

TwinTensor TwinTensor::poisoned(Backend& cpu, Backend& gpu, DType dtype,
                                std::initializer_list<int64_t> shape) {
    TwinTensor tensor(cpu, gpu, dtype, shape);
    const std::vector<char> all_ones(tensor.cpu_view_.bytes(), static_cast<char>(0xff));
    tensor.upload(all_ones.data());
    return tensor;
}

void TwinTensor::upload(const void* bytes) {
    cpu_backend_->copy_to_backend(cpu_view_.data, bytes, cpu_view_.bytes());
    gpu_backend_->copy_to_backend(gpu_view_.data, bytes, gpu_view_.bytes());
}

std::vector<double> TwinTensor::cpu_values() const { return read_values(*cpu_backend_, cpu_view_); }
std::vector<double> TwinTensor::gpu_values() const { return read_values(*gpu_backend_, gpu_view_); }

TwinIndices::TwinIndices(Backend& cpu, Backend& gpu, const std::vector<int32_t>& values,
                         std::initializer_list<int64_t> shape)
    : values_(values) {
    MIXGPT_REQUIRE(values.size() == element_count(shape), "TwinIndices: value count differs from the shape");
    const size_t bytes = values.size() * sizeof(int32_t);
    cpu_buffer_ = cpu.allocate(bytes);
    gpu_buffer_ = gpu.allocate(bytes);
    cpu.copy_to_backend(cpu_buffer_.data(), values.data(), bytes);
    gpu.copy_to_backend(gpu_buffer_.data(), values.data(), bytes);
    cpu_view_ = TensorView(cpu_buffer_.data(), DType::i32, shape);
    gpu_view_ = TensorView(gpu_buffer_.data(), DType::i32, shape);
}

std::vector<double> read_values(Backend& backend, const TensorView& view) {
    std::vector<char> bytes(view.bytes());
    backend.copy_to_host(bytes.data(), view.data, bytes.size());
    std::vector<float> narrow(static_cast<size_t>(view.numel()));
    convert_to_float(bytes.data(), view.dtype, narrow.data(), narrow.size());
    return std::vector<double>(narrow.begin(), narrow.end());
}

void expect_matches_cpu(const std::vector<double>& gpu, const std::vector<double>& cpu,
                        const std::vector<double>& reference, DType storage, Precision precision,
                        const std::string& what) {
    ASSERT_EQ(gpu.size(), cpu.size()) << what;
    ASSERT_EQ(gpu.size(), reference.size()) << what;
    if (precision == Precision::fp32) {
        EXPECT_LE(relative_norm_error(gpu, cpu), kFp32Tolerance) << what << " (fp32: GPU against CPU)";
        return;
    }
    const double gpu_error = relative_norm_error(gpu, reference);
    const double cpu_error = relative_norm_error(cpu, reference);
    const double bound = storage == DType::f32 ? std::max(2.0 * cpu_error, kFp32Tolerance) : 2.0 * cpu_error;
    record_error_ratio(what + " " + precision_name(precision), gpu_error, cpu_error, bound);
    EXPECT_LE(gpu_error, bound) << what << " in " << precision_name(precision) << ": GPU error " << gpu_error
                                << ", CPU error " << cpu_error << " (against float64)";
}

bool gpu_runs_fp8() {
    const CudaDiscovery discovery = discover_cuda();
    if (discovery.devices.empty()) return false;
    const CudaDeviceInfo& device = discovery.devices.front();
    return device.major * 10 + device.minor >= 89;
}

void record_error_ratio(const std::string& what, double gpu_error, double cpu_error, double bound) {
    const char* path = std::getenv("MIXGPT_TEST_RATIO_LOG");
    if (path == nullptr) return;
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::ofstream log(path, std::ios::app);
    log << (test != nullptr ? std::string(test->test_suite_name()) + "." + test->name() : std::string("-")) << '\t'
        << what << '\t' << gpu_error << '\t' << cpu_error << '\t' << bound << '\n';
}

void expect_matches_cpu(const TwinTensor& result, const std::vector<double>& reference, Precision precision,
                        const std::string& what) {
    expect_matches_cpu(result.gpu_values(), result.cpu_values(), reference, result.gpu().dtype, precision,
                       what);
}

void GpuPrecisionTest::SetUp() {
    MIXGPT_GPU_OR_SKIP();
    trace_.emplace(__FILE__, __LINE__, seed_note());
    cpu = make_backend({"cpu", 0, GetParam(), 0});
    gpu = make_backend({"cuda", 0, GetParam(), 0});
}

std::string precision_test_name(const ::testing::TestParamInfo<Precision>& info) {
    return precision_name(info.param);
}

}  // namespace mixgpt::gpu_test
