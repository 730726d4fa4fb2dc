// Helpers of the GPU tests (tests/gpu/): the gate that skips them without a GPU
// (or fails them under MIXGPT_REQUIRE_GPU=1, as `make test-gpu` sets), a seed
// drawn fresh per run, tensors held identically on the CPU and the CUDA backend,
// and the rule a GPU result is judged by against the CPU backend's.
//
// Everything here is plain C++ against the op interface: no CUDA headers.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/tensor.h"
#include "kernels/ops.h"

namespace mixgpt::gpu_test {

// MIXGPT_REQUIRE_GPU=1 in the environment: a missing GPU is a failure, not a skip.
bool gpu_required();

// The seed of this test process's random inputs: MIXGPT_TEST_SEED if set (to rerun a
// failure), else drawn from the clock once per process.
uint32_t run_seed();
// "seed <n> (rerun with MIXGPT_TEST_SEED=<n>)", for SCOPED_TRACE.
std::string seed_note();

}  // namespace mixgpt::gpu_test

// At the start of a test or in SetUp(): skips the test when no CUDA device is
// visible, or fails it when MIXGPT_REQUIRE_GPU=1.
#define MIXGPT_GPU_OR_SKIP()                                                                \
    do {                                                                                    \
        if (::mixgpt::cuda_device_count() == 0) {                                           \
            if (::mixgpt::gpu_test::gpu_required())                                         \
                FAIL() << "MIXGPT_REQUIRE_GPU=1 but no CUDA device is visible"              \
                       << (::mixgpt::built_with_cuda() ? "" : " (this build has no CUDA)"); \
            GTEST_SKIP() << "no CUDA device visible";                                       \
        }                                                                                   \
    } while (0)

// After the GPU gate: skips a test that needs FP8 tensor cores on a device without them (compute
// capability below 8.9: an A100, or the simulator with MIXGPT_CUDA_SIM_ARCH=80), saying so.
#define MIXGPT_FP8_GPU_OR_SKIP()                                                                   \
    do {                                                                                           \
        MIXGPT_GPU_OR_SKIP();                                                                      \
        if (!::mixgpt::gpu_test::gpu_runs_fp8())                                                   \
            GTEST_SKIP() << "the device has no FP8 tensor cores (compute capability below 8.9)"; \
    } while (0)

namespace mixgpt::gpu_test {

// Whether CUDA device 0 has FP8 tensor cores (compute capability 8.9 or newer).
bool gpu_runs_fp8();

// One tensor on both backends holding the same stored values.
class TwinTensor {
public:
    // `values` rounded to `dtype`.
    TwinTensor(Backend& cpu, Backend& gpu, const std::vector<double>& values, DType dtype,
               std::initializer_list<int64_t> shape);
    // Every element NaN (all bits set), so an element an op fails to write shows up.
    static TwinTensor poisoned(Backend& cpu, Backend& gpu, DType dtype, std::initializer_list<int64_t> shape);

    TensorView cpu() const { return cpu_view_; }
    TensorView gpu() const { return gpu_view_; }
    std::vector<double> cpu_values() const;
    std::vector<double> gpu_values() const;

private:
    TwinTensor(Backend& cpu, Backend& gpu, DType dtype, std::initializer_list<int64_t> shape);
    void upload(const void* bytes);

    Backend* cpu_backend_;
    Backend* gpu_backend_;
    Buffer cpu_buffer_, gpu_buffer_;
    TensorView cpu_view_, gpu_view_;
};

// int32 indices (tokens, targets) on both backends, viewed as DType::i32.
class TwinIndices {
public:
    TwinIndices(Backend& cpu, Backend& gpu, const std::vector<int32_t>& values,
                std::initializer_list<int64_t> shape);
    TensorView cpu() const { return cpu_view_; }
    TensorView gpu() const { return gpu_view_; }
    const std::vector<int32_t>& values() const { return values_; }

private:
    std::vector<int32_t> values_;
    Buffer cpu_buffer_, gpu_buffer_;
    TensorView cpu_view_, gpu_view_;
};

// Values of a backend tensor as float64 (one copy to the host).
std::vector<double> read_values(Backend& backend, const TensorView& view);

// How a GPU result is judged against the CPU backend's run of the same op and precision:
//   fp32:             ||gpu - cpu|| / ||cpu|| <= 1e-5;
//   tf32, bf16, fp16: ||gpu - ref|| / ||ref|| <= 2 ||cpu - ref|| / ||ref||, ref the float64
//                     reference of the same stored inputs. A result stored in fp32 may also meet
//                     the FP32 criterion (1e-5) instead: where the CPU's own error is at fp32
//                     rounding level, twice it is no yardstick.
void expect_matches_cpu(const std::vector<double>& gpu, const std::vector<double>& cpu,
                        const std::vector<double>& reference, DType storage, Precision precision,
                        const std::string& what);
void expect_matches_cpu(const TwinTensor& result, const std::vector<double>& reference, Precision precision,
                        const std::string& what);

// With MIXGPT_TEST_RATIO_LOG=<file> in the environment, appends one line per judged comparison,
// "<test>\t<what>\t<GPU error>\t<CPU error>\t<bound>", for the survey of the worst ratios over
// many seeds (scripts/tolerance_survey.py); nothing without it. Every rule that judges a GPU
// error against the CPU's calls it.
void record_error_ratio(const std::string& what, double gpu_error, double cpu_error, double bound);

// A CPU and a CUDA backend of the test's precision (the parameter), created after the GPU gate,
// with the run's seed traced on every failure.
class GpuPrecisionTest : public ::testing::TestWithParam<Precision> {
protected:
    void SetUp() override;
    DType act() const { return activation_dtype(GetParam()); }
    TwinTensor act_tensor(const std::vector<double>& values, std::initializer_list<int64_t> shape) const {
        return TwinTensor(*cpu, *gpu, values, act(), shape);
    }
    TwinTensor f32_tensor(const std::vector<double>& values, std::initializer_list<int64_t> shape) const {
        return TwinTensor(*cpu, *gpu, values, DType::f32, shape);
    }
    TwinTensor poisoned(DType dtype, std::initializer_list<int64_t> shape) const {
        return TwinTensor::poisoned(*cpu, *gpu, dtype, shape);
    }
    void expect_close(const TwinTensor& result, const std::vector<double>& reference,
                      const std::string& what) const {
        expect_matches_cpu(result, reference, GetParam(), what);
    }
    uint32_t seed(uint32_t offset) const { return run_seed() + offset; }

    std::optional<::testing::ScopedTrace> trace_;  // the seed, from SetUp on (not on skips)
    std::unique_ptr<Backend> cpu, gpu;
};

// Names the parameterized tests by precision: ".../fp32".
std::string precision_test_name(const ::testing::TestParamInfo<Precision>& info);

}  // namespace mixgpt::gpu_test
