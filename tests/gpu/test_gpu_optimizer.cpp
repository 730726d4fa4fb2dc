// The optimizer step on the GPU, with StepStatus in device memory: gradient norm and
// non-finite detection, AdamW against the CPU backend per precision (unscale, clip,
// decay range, working copy), skipped steps, an injected overflow under dynamic loss
// scaling, the scale's growth, bf16 stochastic rounding, and cast/scale.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinTensor;
using test::random_normal;

// A StepStatus in device memory, written from and read back to the host.
class DeviceStatus {
public:
    DeviceStatus(Backend& backend, const StepStatus& initial)
        : backend_(backend), memory_(backend.allocate(sizeof(StepStatus))) {
        set(initial);
    }
    StepStatus* get() const { return memory_.as<StepStatus>(); }
    void set(const StepStatus& status) { backend_.copy_to_backend(memory_.data(), &status, sizeof status); }
    StepStatus read() const {
        StepStatus status;
        backend_.copy_to_host(&status, memory_.data(), sizeof status);
        return status;
    }

private:
    Backend& backend_;
    Buffer memory_;
};

void expect_same_status(const StepStatus& got, const StepStatus& expected) {
    EXPECT_EQ(got.loss_scale, expected.loss_scale);
    EXPECT_EQ(got.skip, expected.skip);
    EXPECT_EQ(got.clean_steps, expected.clean_steps);
    EXPECT_EQ(got.skipped_steps, expected.skipped_steps);
    EXPECT_EQ(got.optimizer_steps, expected.optimizer_steps);
}

class GpuOptimizer : public gpu_test::GpuPrecisionTest {
protected:
    static constexpr int kCount = 4099;  // not a multiple of 4: the scalar paths run too
    static constexpr int64_t kDecayCount = 3000;
};

TEST_P(GpuOptimizer, GradNormSquaredAndNonFiniteDetection) {
    for (int n : {200000, 100003}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        const TwinTensor grads = f32_tensor(random_normal(n, seed(1), 1e-2), {n});
        StepStatus initial;
        initial.skip = 1;
        DeviceStatus status(*gpu, initial);
        gpu->grad_norm_squared(status.get(), grads.gpu());
        const F64GradNorm ref = f64_grad_norm_squared(grads.cpu_values());
        EXPECT_LE(std::abs(status.read().grad_norm_squared - ref.norm_squared) / ref.norm_squared, 1e-5);
        EXPECT_EQ(status.read().skip, 0);

        for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
            gpu->copy_to_backend(grads.gpu().as<float>() + n / 2, &bad, sizeof bad);
            gpu->grad_norm_squared(status.get(), grads.gpu());
            EXPECT_EQ(status.read().skip, 1) << bad;
        }
    }
}

TEST_P(GpuOptimizer, AdamWMatchesCpu) {
    struct Case {
        float loss_scale;
        float max_grad_norm;  // 0.05 clips these gradients, 0 disables clipping
    };
    for (const Case c : {Case{1024.f, 0.05f}, Case{1.f, 0.f}}) {
        SCOPED_TRACE("loss scale " + std::to_string(c.loss_scale) + ", max_grad_norm " +
                     std::to_string(c.max_grad_norm));
        AdamWHyper hyper;
        hyper.learning_rate = 1e-2f;
        hyper.max_grad_norm = c.max_grad_norm;
        const TwinTensor params = f32_tensor(random_normal(kCount, seed(10)), {kCount});
        const TwinTensor grads = f32_tensor(random_normal(kCount, seed(11), 1e-2 * c.loss_scale), {kCount});
        const TwinTensor m = f32_tensor(random_normal(kCount, seed(12), 1e-3), {kCount});
        std::vector<double> second_moment = random_normal(kCount, seed(13), 1e-5);
        for (double& value : second_moment) value = std::abs(value);
        const TwinTensor v = f32_tensor(second_moment, {kCount});
        const bool separate_working = act() != DType::f32;
        const TwinTensor working = poisoned(act(), {kCount});

        std::vector<double> p_ref = params.cpu_values(), m_ref = m.cpu_values(), v_ref = v.cpu_values();
        StepStatus start;
        start.loss_scale = c.loss_scale;
        start.optimizer_steps = 4;
        StepStatus cpu_status = start, ref_status = start;
        cpu->grad_norm_squared(&cpu_status, grads.cpu());
        DeviceStatus gpu_status(*gpu, start);
        gpu->grad_norm_squared(gpu_status.get(), grads.gpu());
        ref_status.grad_norm_squared = cpu_status.grad_norm_squared;
        f64_adamw_step(p_ref, grads.cpu_values(), m_ref, v_ref, kDecayCount, hyper, ref_status);

        cpu->adamw_step(params.cpu(), grads.cpu(), m.cpu(), v.cpu(),
                        separate_working ? working.cpu() : params.cpu(), kDecayCount, hyper, &cpu_status);
        gpu->adamw_step(params.gpu(), grads.gpu(), m.gpu(), v.gpu(),
                        separate_working ? working.gpu() : params.gpu(), kDecayCount, hyper,
                        gpu_status.get());
        expect_same_status(gpu_status.read(), cpu_status);
        EXPECT_EQ(gpu_status.read().optimizer_steps, 5);
        expect_close(params, p_ref, "params");
        expect_close(m, m_ref, "m");
        expect_close(v, v_ref, "v");
        if (separate_working) expect_close(working, p_ref, "working");
    }
}

TEST_P(GpuOptimizer, SkippedStepChangesNothing) {
    const TwinTensor params = f32_tensor(random_normal(kCount, seed(20)), {kCount});
    const TwinTensor grads = f32_tensor(random_normal(kCount, seed(21)), {kCount});
    const TwinTensor m = f32_tensor(random_normal(kCount, seed(22)), {kCount});
    const TwinTensor v = f32_tensor(random_normal(kCount, seed(23), 0.1), {kCount});
    const TwinTensor working = poisoned(act(), {kCount});
    StepStatus start;
    start.skip = 1;
    start.optimizer_steps = 7;
    DeviceStatus status(*gpu, start);
    AdamWHyper hyper;
    hyper.learning_rate = 0.1f;
    const std::vector<double> p0 = params.gpu_values(), m0 = m.gpu_values(), v0 = v.gpu_values();
    const std::vector<char> poison(working.gpu().bytes(), static_cast<char>(0xff));
    gpu->adamw_step(params.gpu(), grads.gpu(), m.gpu(), v.gpu(), working.gpu(), kDecayCount, hyper,
                    status.get());
    EXPECT_EQ(params.gpu_values(), p0);
    EXPECT_EQ(m.gpu_values(), m0);
    EXPECT_EQ(v.gpu_values(), v0);
    std::vector<char> working_bytes(working.gpu().bytes());
    gpu->copy_to_host(working_bytes.data(), working.gpu().data, working_bytes.size());
    EXPECT_EQ(working_bytes, poison);
    EXPECT_EQ(status.read().optimizer_steps, 7);
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuOptimizer,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         gpu_test::precision_test_name);

class GpuLossScaling : public ::testing::Test {
protected:
    void SetUp() override {
        MIXGPT_GPU_OR_SKIP();
        trace_.emplace(__FILE__, __LINE__, gpu_test::seed_note());
        gpu = make_backend({"cuda", 0, Precision::fp16, 0});
    }
    std::optional<::testing::ScopedTrace> trace_;
    std::unique_ptr<Backend> gpu;
};

// FP16 with dynamic scaling: one gradient set to Inf makes the whole step, decided on the
// device, a no-op; the scale halves; the next clean step applies and counts.
TEST_F(GpuLossScaling, InjectedOverflowIsSkippedOnTheDeviceAndTheScaleHalves) {
    const int n = 1000;
    const uint32_t seed = gpu_test::run_seed();
    // params, grads, m, v (n) f32, then the working copy (n) fp16.
    Buffer memory = gpu->allocate(4 * n * sizeof(float) + n * sizeof(uint16_t));
    float* base = memory.as<float>();
    const TensorView params(base, DType::f32, {n}), grads(base + n, DType::f32, {n}),
        m(base + 2 * n, DType::f32, {n}), v(base + 3 * n, DType::f32, {n}),
        working(base + 4 * n, DType::f16, {n});
    for (int k = 0; k < 4; ++k) {
        const std::vector<double> values = random_normal(n, seed + k, k == 3 ? 0.1 : 1.0);
        std::vector<float> narrow(values.begin(), values.end());
        if (k == 3)
            for (float& value : narrow) value = std::abs(value);  // v >= 0
        gpu->copy_to_backend(base + k * n, narrow.data(), n * sizeof(float));
    }
    const float inf = std::numeric_limits<float>::infinity();
    gpu->copy_to_backend(base + n + 17, &inf, sizeof inf);

    LossScaleConfig config;
    config.dynamic = true;
    StepStatus start;
    start.loss_scale = 65536.f;
    start.clean_steps = 5;
    DeviceStatus status(*gpu, start);
    AdamWHyper hyper;
    hyper.learning_rate = 1e-2f;
    std::vector<float> before(4 * n), after(4 * n);
    gpu->copy_to_host(before.data(), base, before.size() * sizeof(float));

    gpu->grad_norm_squared(status.get(), grads);
    gpu->adamw_step(params, grads, m, v, working, n / 2, hyper, status.get());
    gpu->update_loss_scale(status.get(), config);
    StepStatus expected = start;
    expected.skip = 1;
    expected.loss_scale = 32768.f;
    expected.clean_steps = 0;
    expected.skipped_steps = 1;
    expect_same_status(status.read(), expected);
    EXPECT_TRUE(std::isinf(status.read().grad_norm_squared));
    gpu->copy_to_host(after.data(), base, after.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)), 0)
        << "params, grads, m and v must be untouched by a skipped step";

    const float finite = 0.5f;
    gpu->copy_to_backend(base + n + 17, &finite, sizeof finite);
    gpu->grad_norm_squared(status.get(), grads);
    gpu->adamw_step(params, grads, m, v, working, n / 2, hyper, status.get());
    gpu->update_loss_scale(status.get(), config);
    expected.skip = 0;
    expected.clean_steps = 1;
    expected.optimizer_steps = 1;
    expect_same_status(status.read(), expected);
    gpu->copy_to_host(after.data(), base, n * sizeof(float));
    EXPECT_NE(std::memcmp(before.data(), after.data(), n * sizeof(float)), 0)
        << "the clean step updates params";
}

// The scale's growth after growth_interval clean steps, backoff down to min_scale, against
// the reference's update rule step by step.
TEST_F(GpuLossScaling, ScaleFollowsTheReferenceRule) {
    LossScaleConfig config;
    config.dynamic = true;
    config.growth_interval = 3;
    config.min_scale = 4.f;
    StepStatus reference;
    reference.loss_scale = 8.f;
    DeviceStatus status(*gpu, reference);
    for (int skip : {0, 0, 0, 1, 1, 1, 0, 0, 0, 0}) {
        reference.skip = skip;
        StepStatus device = status.read();
        device.skip = skip;
        status.set(device);
        gpu->update_loss_scale(status.get(), config);
        f64_update_loss_scale(reference, config);
        expect_same_status(status.read(), reference);
    }
}

// decide_skip on the device: a combined norm that is not finite skips, a finite one clears.
TEST_F(GpuLossScaling, DecideSkipFollowsTheCombinedNorm) {
    DeviceStatus status(*gpu, StepStatus{});
    for (float norm :
         {3.5f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 0.f}) {
        StepStatus device = status.read();
        device.grad_norm_squared = norm;
        device.skip = std::isfinite(norm) ? 1 : 0;
        status.set(device);
        gpu->decide_skip(status.get());
        EXPECT_EQ(status.read().skip, std::isfinite(norm) ? 0 : 1) << norm;
    }
}

// bf16 working copy with stochastic rounding: with lr = 0 the masters stay put, every master
// sits a quarter ulp above a bf16 value, so each element rounds up with probability 1/4. The
// GPU draws the same bits as the CPU backend (the same hash of seed and index).
TEST(GpuStochasticRounding, RoundsUpWithTheDiscardedFractionAndMatchesTheCpu) {
    MIXGPT_GPU_OR_SKIP();
    SCOPED_TRACE(gpu_test::seed_note());
    auto cpu = make_backend({"cpu", 0, Precision::bf16, 0});
    auto gpu = make_backend({"cuda", 0, Precision::bf16, 0});
    const int n = 100000;
    const double master = 1.0 + std::ldexp(1.0, -9);  // bf16's ulp at 1 is 2^-7
    const TwinTensor params(*cpu, *gpu, std::vector<double>(n, master), DType::f32, {n});
    const TwinTensor grads(*cpu, *gpu, random_normal(n, gpu_test::run_seed()), DType::f32, {n});
    const TwinTensor m(*cpu, *gpu, std::vector<double>(n, 0.0), DType::f32, {n});
    const TwinTensor v(*cpu, *gpu, std::vector<double>(n, 0.0), DType::f32, {n});
    const TwinTensor working = TwinTensor::poisoned(*cpu, *gpu, DType::bf16, {n});
    AdamWHyper hyper;
    hyper.learning_rate = 0.f;
    hyper.stochastic_rounding = true;
    hyper.seed = gpu_test::run_seed();
    StepStatus cpu_status;
    DeviceStatus gpu_status(*gpu, cpu_status);
    cpu->adamw_step(params.cpu(), grads.cpu(), m.cpu(), v.cpu(), working.cpu(), 0, hyper, &cpu_status);
    gpu->adamw_step(params.gpu(), grads.gpu(), m.gpu(), v.gpu(), working.gpu(), 0, hyper, gpu_status.get());

    const std::vector<double> rounded = working.gpu_values();
    EXPECT_EQ(rounded, working.cpu_values());
    int up = 0;
    for (double value : rounded) {
        ASSERT_TRUE(value == 1.0 || value == 1.0 + std::ldexp(1.0, -7)) << value;
        up += value > 1.0 ? 1 : 0;
    }
    // Binomial(n, 1/4): the fraction is within 4 standard deviations of 1/4.
    const double sigma = std::sqrt(0.25 * 0.75 / n);
    EXPECT_NEAR(static_cast<double>(up) / n, 0.25, 4 * sigma);
}

// Casts between every pair of dtypes round like the host conversion (nearest even): bit for bit.
TEST(GpuElementwise, CastAndScaleMatchTheCpuBitForBit) {
    MIXGPT_GPU_OR_SKIP();
    SCOPED_TRACE(gpu_test::seed_note());
    auto cpu = make_backend({"cpu", 0, Precision::fp32, 0});
    auto gpu = make_backend({"cuda", 0, Precision::fp32, 0});
    const int n = 1027;
    for (DType from : {DType::f32, DType::bf16, DType::f16})
        for (DType to : {DType::f32, DType::bf16, DType::f16}) {
            SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
            const TwinTensor in(*cpu, *gpu, random_normal(n, gpu_test::run_seed(), 100.0), from, {n});
            const TwinTensor out = TwinTensor::poisoned(*cpu, *gpu, to, {n});
            cpu->cast(out.cpu(), in.cpu());
            gpu->cast(out.gpu(), in.gpu());
            EXPECT_EQ(out.gpu_values(), out.cpu_values());
        }
    const TwinTensor x(*cpu, *gpu, random_normal(n, gpu_test::run_seed() + 1), DType::f32, {n});
    cpu->scale(x.cpu(), 0.37f);
    gpu->scale(x.gpu(), 0.37f);
    EXPECT_EQ(x.gpu_values(), x.cpu_values());
}

}  // namespace
}  // namespace mixgpt
