// The FP8 quantization and scaling kernels (kernels/cuda/fp8_cast.h, fp8_scaling.h) against the
// CPU's (kernels/cpu/fp8_cast.h, kernels/fp8_scaling.h): the same arithmetic, so bit for bit —
// every code, every transposed code, amax, saturation count and every value of the scaling state.
// CUDA builds only (tests/gpu/gpu_fp8_support.h).
#ifdef MIXGPT_WITH_CUDA
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/fp8.h"
#include "kernels/cpu/fp8_cast.h"
#include "kernels/cuda/fp8_cast.h"
#include "kernels/cuda/fp8_scaling.h"
#include "kernels/fp8_scaling.h"
#include "tests/gpu/gpu_fp8_support.h"

namespace mixgpt::gpu_test {
namespace {

// Normal values of spread `range`, a few 16 times larger (they saturate at scale fp8_max / range)
// and infinities; NaN only when asked (the output poison is the NaN code).
std::vector<float> values_with_outliers(size_t count, float range, uint32_t seed, bool with_nan) {
    std::mt19937 random(seed);
    std::normal_distribution<float> normal(0.f, range / 4);
    std::vector<float> values(count);
    for (float& value : values) {
        const uint32_t kind = random() % 200;
        value = kind == 0               ? -INFINITY
                : kind == 1 && with_nan ? NAN
                : kind < 8              ? 16 * normal(random)
                                        : normal(random);
    }
    return values;
}

std::vector<unsigned char> stored(const std::vector<float>& values, DType dtype) {
    std::vector<unsigned char> bytes(values.size() * dtype_size(dtype));
    convert_from_float(values.data(), bytes.data(), dtype, values.size());
    return bytes;
}

struct Shape {
    int64_t rows, cols;
};

// Quantization of one tensor on the device against cpu::quantize_fp8.
class GpuFp8QuantizeTest : public GpuFp8Test {
protected:
    void expect_matches_cpu(DType dtype, Fp8Format format, Shape shape, bool transposed, uint32_t seed) {
        SCOPED_TRACE(testing::Message()
                     << dtype_name(dtype) << " " << fp8_format_name(format) << " " << shape.rows << " x "
                     << shape.cols << (transposed ? " transposed" : ""));
        const size_t count = static_cast<size_t>(shape.rows * shape.cols);
        const float scale_value = fp8_max(format) / 8.f;
        const std::vector<unsigned char> input = stored(values_with_outliers(count, 8.f, seed, false), dtype);
        std::vector<uint8_t> want(count), want_transposed(count);
        const Fp8QuantizeStats want_stats = cpu::quantize_fp8(
            TensorView(const_cast<unsigned char*>(input.data()), dtype, {shape.rows, shape.cols}),
            scale_value, format, want.data(), want_transposed.data());

        const Buffer in = upload(input), scale = upload(std::vector<float>{scale_value});
        // The totals accumulate: amax from 0.5 (below the tensor's), the count from 5.
        const Buffer amax = upload(std::vector<float>{0.5f});
        const Buffer saturated = upload(std::vector<unsigned long long>{5});
        const Buffer codes = filled(count, kFp8NanBits), codes_t = filled(count, kFp8NanBits);
        cuda::Fp8QuantizeParams params;
        params.in = in.data();
        params.in_dtype = dtype;
        params.rows = shape.rows;
        params.cols = shape.cols;
        params.format = format;
        params.scale = scale.as<float>();
        params.codes = codes.as<uint8_t>();
        params.codes_transposed = transposed ? codes_t.as<uint8_t>() : nullptr;
        params.amax = amax.as<float>();
        params.saturated = saturated.as<unsigned long long>();
        cuda::fp8_quantize(params, stream);
        EXPECT_EQ(download<uint8_t>(codes.data(), count), want);
        if (transposed) {
            EXPECT_EQ(download<uint8_t>(codes_t.data(), count), want_transposed);
        }
        EXPECT_EQ(download<float>(amax.data(), 1)[0], std::max(0.5f, want_stats.amax));
        EXPECT_EQ(download<unsigned long long>(saturated.data(), 1)[0], 5 + want_stats.saturated);
    }
};

class GpuFp8Quantize : public GpuFp8QuantizeTest,
                       public ::testing::WithParamInterface<std::tuple<DType, Fp8Format>> {};

TEST_P(GpuFp8Quantize, CodesTransposeAmaxAndCountEqualTheCpus) {
    const auto [dtype, format] = GetParam();
    uint32_t seed = run_seed();
    // Partial tiles, odd sizes (byte stores), one element, one column.
    for (const Shape shape :
         {Shape{37, 70}, Shape{64, 128}, Shape{33, 65}, Shape{1, 1}, Shape{3, 1}, Shape{130, 200}})
        for (const bool transposed : {false, true})
            expect_matches_cpu(dtype, format, shape, transposed, ++seed);
}

// More tiles than blocks (1024): blocks walk several tiles, reusing the shared tile.
TEST_F(GpuFp8QuantizeTest, BlocksThatWalkSeveralTilesMatchTheCpu) {
    expect_matches_cpu(DType::bf16, Fp8Format::e4m3, Shape{2, 64 * 1100 + 3}, true, run_seed());
}

INSTANTIATE_TEST_SUITE_P(GpuDtypesAndFormats, GpuFp8Quantize,
                         ::testing::Combine(::testing::Values(DType::f32, DType::bf16, DType::f16),
                                            ::testing::Values(Fp8Format::e4m3, Fp8Format::e5m2)),
                         [](const ::testing::TestParamInfo<std::tuple<DType, Fp8Format>>& info) {
                             return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                    fp8_format_name(std::get<1>(info.param));
                         });

TEST_F(GpuFp8Test, NaNInputsGiveTheNaNCodeAndLeaveAmaxAlone) {
    const std::vector<float> input = {1.f, NAN, -3.f, -NAN, 2.f, 0.f};
    const Buffer in = upload(input), scale = upload(std::vector<float>{2.f}),
                 amax = upload(std::vector<float>{0.f});
    const Buffer codes = filled(input.size(), 0);
    cuda::Fp8QuantizeParams params;
    params.in = in.data();
    params.in_dtype = DType::f32;
    params.rows = 2;
    params.cols = 3;
    params.scale = scale.as<float>();
    params.codes = codes.as<uint8_t>();
    params.amax = amax.as<float>();
    cuda::fp8_quantize(params, stream);
    const std::vector<uint8_t> got = download<uint8_t>(codes.data(), input.size());
    for (size_t i = 0; i < input.size(); ++i)
        EXPECT_EQ(got[i], float_to_e4m3_bits(input[i] * 2.f)) << "element " << i;
    EXPECT_EQ(got[1], kFp8NanBits);
    EXPECT_EQ(got[3], kFp8NanBits);
    EXPECT_EQ(download<float>(amax.data(), 1)[0], 3.f);
}

TEST_F(GpuFp8Test, AmaxPassEqualsTheCpusMax) {
    for (const DType dtype : {DType::f32, DType::bf16, DType::f16}) {
        const std::vector<float> values = values_with_outliers(5000, 3.f, run_seed() + 7, true);
        const std::vector<unsigned char> input = stored(values, dtype);
        std::vector<float> held(values.size());
        convert_to_float(input.data(), dtype, held.data(), held.size());
        std::vector<uint8_t> ignored(values.size());
        const float want =
            quantize_to_fp8(held.data(), 1.f, ignored.data(), held.size(), Fp8Format::e4m3).amax;
        const Buffer in = upload(input), amax = upload(std::vector<float>{0.f});
        cuda::fp8_amax(in.data(), dtype, static_cast<int64_t>(values.size()), amax.as<float>(), stream);
        EXPECT_EQ(download<float>(amax.data(), 1)[0], want) << dtype_name(dtype);
    }
}

TEST_F(GpuFp8Test, QuantizeRefusesBadArguments) {
    cuda::Fp8QuantizeParams params;
    params.in_dtype = DType::i32;
    params.rows = params.cols = 4;
    EXPECT_THROW(cuda::fp8_quantize(params, stream), Error);
    params.in_dtype = DType::bf16;
    EXPECT_THROW(cuda::fp8_quantize(params, stream), Error);  // no pointers
}

// The device's delayed and current updates against Fp8ScalingState, value for value, over steps
// whose amaxes include 0, infinity and one too small for fp32 to hold scaled_max / amax.
class GpuFp8Scaling : public GpuFp8Test, public ::testing::WithParamInterface<AmaxCompute> {};

TEST_P(GpuFp8Scaling, DelayedUpdateEqualsTheCpuStateStepByStep) {
    const Fp8ScalingConfig config{Fp8Scaling::delayed, 5, GetParam(), 1};
    const int tensors = 3;
    Fp8ScalingState cpu_state(tensors, Fp8Format::e5m2, config);
    const Buffer values = upload(cpu_state.flat());
    const cuda::Fp8ScalingDevice device{values.as<float>(), nullptr, tensors, Fp8Format::e5m2, config};
    std::mt19937 random(run_seed());
    std::lognormal_distribution<float> amaxes(0.f, 4.f);
    for (int step = 0; step < 12; ++step) {
        for (int t = 0; t < tensors; ++t) {
            float amax = amaxes(random);
            if ((step + t) % 7 == 3) amax = 0.f;
            if (step == 5 && t == 1) amax = INFINITY;
            if (step == 8 && t == 2) amax = 1e-39f;
            cpu_state.record(t, {amax, 0});
            CUDA_CHECK(cudaMemcpyAsync(device.amax_slot(t), &cpu_state.flat()[2 * tensors + t * 5],
                                       sizeof(float), cudaMemcpyHostToDevice, stream));
        }
        cpu_state.update_delayed();
        cuda::fp8_update_delayed(device, stream);
        ASSERT_EQ(download<float>(values.data(), cpu_state.flat().size()), cpu_state.flat())
            << "step " << step;
    }
}

TEST_P(GpuFp8Scaling, CurrentScalingFromTheAmaxPassEqualsTheCpus) {
    const Fp8ScalingConfig config{Fp8Scaling::current, 1, GetParam(), 0};
    Fp8ScalingState cpu_state(2, Fp8Format::e4m3, config);
    const Buffer values = upload(cpu_state.flat());
    const cuda::Fp8ScalingDevice device{values.as<float>(), nullptr, 2, Fp8Format::e4m3, config};
    // With infinities (amax infinite: scale 1), then without.
    const std::vector<float> tensor = values_with_outliers(1000, 0.25f, run_seed(), false);
    std::vector<float> finite;
    for (const float value : tensor)
        if (std::isfinite(value)) finite.push_back(value);
    for (const std::vector<float>* input : std::vector<const std::vector<float>*>{&tensor, &finite}) {
        std::vector<uint8_t> ignored(input->size());
        const float amax =
            quantize_to_fp8(input->data(), 1.f, ignored.data(), input->size(), Fp8Format::e4m3).amax;
        cpu_state.update_current(1, amax);
        const Buffer in = upload(*input);
        cuda::fp8_amax(in.data(), DType::f32, static_cast<int64_t>(input->size()), device.amax_slot(1),
                       stream);
        cuda::fp8_update_current(device, 1, stream);
        EXPECT_EQ(download<float>(values.data(), cpu_state.flat().size()), cpu_state.flat());
    }
}

INSTANTIATE_TEST_SUITE_P(GpuAmaxComputations, GpuFp8Scaling,
                         ::testing::Values(AmaxCompute::max, AmaxCompute::most_recent),
                         [](const ::testing::TestParamInfo<AmaxCompute>& info) {
                             return std::string(amax_compute_name(info.param));
                         });

}  // namespace
}  // namespace mixgpt::gpu_test
#endif  // MIXGPT_WITH_CUDA
