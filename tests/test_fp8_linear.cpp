// One linear layer's FP8 training step through the CPU backend's fp8_matmul_* ops (kernels/ops.def),
// two steps of delayed scaling and one of current scaling, bit for bit against an independent
// reference written here from the ops' documented meaning: quantize each operand element by
// element (core/fp8.h's conversion of fl(x · scale)), sum the decoded products over k in order in
// fp32, multiply by fl(scale_inverse_a · scale_inverse_b), add the bias, round to bf16; the
// scaling state's amax, saturation counts and scales as kernels/fp8_scaling.h defines them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/fp8.h"
#include "kernels/ops.h"

namespace mixgpt {
namespace {

constexpr int64_t M = 32, K = 48, N = 16;  // inp (M,K), weight (N,K), out (M,N)

// Values stored as bf16 (host copies as floats, exactly representable), N(0, spread).
std::vector<float> bf16_values(size_t count, float spread, uint32_t seed) {
    std::mt19937 random(seed);
    std::normal_distribution<float> normal(0.f, spread);
    std::vector<float> values(count);
    for (float& v : values) v = round_to_dtype(normal(random), DType::bf16);
    return values;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& values) {
    std::vector<uint16_t> bits(values.size());
    convert_from_float(values.data(), bits.data(), DType::bf16, values.size());
    return bits;
}

// The reference quantization of (rows, cols) x: decoded FP8 values of fl(x · scale), transposed
// to (cols, rows) when asked; amax and saturation count as kernels/fp8_scaling.h defines them.
struct Quantized {
    std::vector<float> values;
    float amax = 0.f;
    uint64_t saturated = 0;
};
Quantized quantize_reference(const std::vector<float>& x, int64_t rows, int64_t cols, float scale,
                             Fp8Format format, bool transpose) {
    Quantized q;
    q.values.resize(x.size());
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            const float x_value = x[static_cast<size_t>(r * cols + c)];
            const float scaled = x_value * scale;
            q.amax = std::fmax(q.amax, std::fabs(x_value));
            if (std::fabs(scaled) > fp8_max(format)) ++q.saturated;
            const float decoded = fp8_bits_to_float(float_to_fp8_bits(scaled, format), format);
            q.values[static_cast<size_t>(transpose ? c * rows + r : r * cols + c)] = decoded;
        }
    return q;
}

// (rows_a, K') · (rows_b, K')^T in the documented order, then scaled, [+ initial], [+ bias].
std::vector<float> product_reference(const Quantized& a, const Quantized& b, int64_t rows_a, int64_t rows_b,
                                     int64_t inner, float a_inverse, float b_inverse,
                                     const std::vector<float>* bias, const std::vector<float>* initial) {
    std::vector<float> out(static_cast<size_t>(rows_a * rows_b));
    const float s = a_inverse * b_inverse;
    for (int64_t i = 0; i < rows_a; ++i)
        for (int64_t j = 0; j < rows_b; ++j) {
            float acc = 0.f;
            for (int64_t k = 0; k < inner; ++k)
                acc += a.values[static_cast<size_t>(i * inner + k)] *
                       b.values[static_cast<size_t>(j * inner + k)];
            float v = acc * s;
            if (initial != nullptr) v = (*initial)[static_cast<size_t>(i * rows_b + j)] + v;
            if (bias != nullptr) v = v + (*bias)[static_cast<size_t>(j)];
            out[static_cast<size_t>(i * rows_b + j)] = v;
        }
    return out;
}

// The state of one linear layer: forward (inp 0, weight 1, E4M3), backward (dout 0, E5M2).
struct LayerState {
    explicit LayerState(const Fp8ScalingConfig& config)
        : forward(2, Fp8Format::e4m3, config),
          backward(1, Fp8Format::e5m2, config),
          forward_values(forward.flat()),
          backward_values(backward.flat()),
          forward_saturated(2, 0),
          backward_saturated(1, 0) {}
    Fp8TensorScaling slot(bool is_forward, int tensor) {
        Fp8TensorScaling s;
        s.values = is_forward ? forward_values.data() : backward_values.data();
        s.saturated = is_forward ? forward_saturated.data() : backward_saturated.data();
        s.tensors = is_forward ? 2 : 1;
        s.tensor = tensor;
        s.format = is_forward ? Fp8Format::e4m3 : Fp8Format::e5m2;
        s.config = forward.config();
        return s;
    }
    Fp8ScalingState forward, backward;  // only for their initial flat forms and config
    std::vector<float> forward_values, backward_values;
    std::vector<uint64_t> forward_saturated, backward_saturated;
};

void expect_bits_equal(const std::vector<float>& expected, const std::vector<uint16_t>& actual,
                       const char* what) {
    const std::vector<uint16_t> expected_bits = to_bf16(expected);
    ASSERT_EQ(expected_bits.size(), actual.size());
    for (size_t i = 0; i < actual.size(); ++i)
        ASSERT_EQ(expected_bits[i], actual[i]) << what << " element " << i;
}

void expect_floats_equal(const std::vector<float>& expected, const std::vector<float>& actual,
                         const char* what) {
    ASSERT_EQ(expected.size(), actual.size());
    for (size_t i = 0; i < actual.size(); ++i)
        ASSERT_EQ(std::memcmp(&expected[i], &actual[i], sizeof(float)), 0)
            << what << " element " << i << ": " << expected[i] << " vs " << actual[i];
}

// One step (forward, backward input, backward weight) with the scales the state holds, checked
// element by element; returns nothing, records what the reference saw into `seen` (amax per tensor).
void run_step(Backend& backend, LayerState& state, const std::vector<float>& x, const std::vector<float>& w,
              const std::vector<float>& bias, const std::vector<float>& dy, std::vector<float>& dweight,
              std::vector<float>& dbias, float seen_amax[3], uint64_t seen_saturated[3]) {
    const bool current = state.forward.config().scaling == Fp8Scaling::current;
    const float e4m3_max = fp8_max(Fp8Format::e4m3), e5m2_max = fp8_max(Fp8Format::e5m2);
    auto amax_of = [](const std::vector<float>& v) {
        float a = 0.f;
        for (float x_value : v) a = std::fmax(a, std::fabs(x_value));
        return a;
    };
    const float sx = current ? e4m3_max / amax_of(x) : state.forward_values[0];
    const float sw = current ? e4m3_max / amax_of(w) : state.forward_values[1];
    const float sg = current ? e5m2_max / amax_of(dy) : state.backward_values[0];

    std::vector<uint16_t> x_bits = to_bf16(x), w_bits = to_bf16(w), b_bits = to_bf16(bias),
                          dy_bits = to_bf16(dy);
    std::vector<uint16_t> out(static_cast<size_t>(M * N)), dx(static_cast<size_t>(M * K));
    const TensorView xv(x_bits.data(), DType::bf16, {M, K}), wv(w_bits.data(), DType::bf16, {N, K});
    const TensorView dyv(dy_bits.data(), DType::bf16, {M, N});
    backend.fp8_matmul_forward(TensorView(out.data(), DType::bf16, {M, N}), xv, wv,
                               TensorView(b_bits.data(), DType::bf16, {N}), state.slot(true, 0),
                               state.slot(true, 1));
    backend.fp8_matmul_backward_input(TensorView(dx.data(), DType::bf16, {M, K}), dyv, wv,
                                      state.slot(false, 0), state.slot(true, 1));
    const std::vector<float> dweight_before = dweight, dbias_before = dbias;
    backend.fp8_matmul_backward_weight(TensorView(dweight.data(), DType::f32, {N, K}),
                                       TensorView(dbias.data(), DType::f32, {N}), dyv, xv,
                                       state.slot(false, 0), state.slot(true, 0));

    const Quantized qx = quantize_reference(x, M, K, sx, Fp8Format::e4m3, false);
    const Quantized qw = quantize_reference(w, N, K, sw, Fp8Format::e4m3, false);
    const Quantized qw_t = quantize_reference(w, N, K, sw, Fp8Format::e4m3, true);  // (K, N)
    const Quantized qdy = quantize_reference(dy, M, N, sg, Fp8Format::e5m2, false);
    const Quantized qdy_t = quantize_reference(dy, M, N, sg, Fp8Format::e5m2, true);  // (N, M)
    const Quantized qx_t = quantize_reference(x, M, K, sx, Fp8Format::e4m3, true);    // (K, M)
    expect_bits_equal(product_reference(qx, qw, M, N, K, 1.f / sx, 1.f / sw, &bias, nullptr), out, "out");
    expect_bits_equal(product_reference(qdy, qw_t, M, K, N, 1.f / sg, 1.f / sw, nullptr, nullptr), dx,
                      "dinp");
    expect_floats_equal(product_reference(qdy_t, qx_t, N, K, M, 1.f / sg, 1.f / sx, nullptr, &dweight_before),
                        dweight, "dweight");
    std::vector<float> expected_dbias = dbias_before;
    for (int64_t j = 0; j < N; ++j) {
        float sum = 0.f;
        for (int64_t i = 0; i < M; ++i) sum += dy[static_cast<size_t>(i * N + j)];
        expected_dbias[static_cast<size_t>(j)] += sum;
    }
    expect_floats_equal(expected_dbias, dbias, "dbias");
    // Each tensor quantized twice this step (the weight: forward and backward input; inp: forward
    // and weight gradient; dout: both backward products): counts twice, amax once.
    seen_amax[0] = qx.amax;
    seen_amax[1] = qw.amax;
    seen_amax[2] = qdy.amax;
    seen_saturated[0] = 2 * qx.saturated;
    seen_saturated[1] = 2 * qw.saturated;
    seen_saturated[2] = 2 * qdy.saturated;
}

struct Inputs {
    std::vector<float> x, w, bias, dy;
};

// Weights past E4M3's 448 and gradients far below 1: at scale 1 the weights saturate and the
// gradients lose precision, which scaling must fix on the next step.
Inputs layer_inputs(uint32_t seed) {
    return {bf16_values(M * K, 1.f, seed), bf16_values(N * K, 300.f, seed + 1),
            bf16_values(N, 0.5f, seed + 2), bf16_values(M * N, 1e-4f, seed + 3)};
}

TEST(Fp8Linear, DelayedScalingStepsEqualTheQuantiseThenMultiplyReference) {
    const std::unique_ptr<Backend> backend = make_backend({"cpu", 0, Precision::fp8, 2});
    LayerState state(Fp8ScalingConfig{Fp8Scaling::delayed, 4, AmaxCompute::max, 0});
    std::vector<float> dweight = bf16_values(N * K, 0.01f, 7), dbias(N, 0.25f);
    float amax[3];
    uint64_t saturated[3];
    const Inputs first = layer_inputs(11);
    run_step(*backend, state, first.x, first.w, first.bias, first.dy, dweight, dbias, amax, saturated);
    EXPECT_GT(saturated[1], 0u) << "the first step (scale 1) should clip weights past 448";
    EXPECT_EQ(state.forward_saturated[0], saturated[0]);
    EXPECT_EQ(state.forward_saturated[1], saturated[1]);
    EXPECT_EQ(state.backward_saturated[0], saturated[2]);
    const int history = 4;
    EXPECT_EQ(state.forward_values[2 * 2 + 0 * history], amax[0]);  // slot 0 of inp's history
    EXPECT_EQ(state.forward_values[2 * 2 + 1 * history], amax[1]);
    EXPECT_EQ(state.backward_values[2 * 1], amax[2]);

    backend->fp8_update_delayed(state.slot(true, 0));
    backend->fp8_update_delayed(state.slot(false, 0));
    EXPECT_EQ(state.forward_values[1], fp8_max(Fp8Format::e4m3) / amax[1]);
    EXPECT_EQ(state.backward_values[0], fp8_max(Fp8Format::e5m2) / amax[2]);
    EXPECT_EQ(state.forward_values[2 + 1], 1.f / state.forward_values[1]);
    EXPECT_EQ(state.forward_values[2 * 2 + 1 * history + 1], amax[1]) << "the history shifted by one";

    const Inputs second = layer_inputs(11);  // the same tensors: amax == the new scales' amax
    run_step(*backend, state, second.x, second.w, second.bias, second.dy, dweight, dbias, amax, saturated);
    EXPECT_EQ(saturated[0] + saturated[1] + saturated[2], 0u) << "scaled to their amax, nothing clips";
}

TEST(Fp8Linear, CurrentScalingStepEqualsTheQuantiseThenMultiplyReference) {
    const std::unique_ptr<Backend> backend = make_backend({"cpu", 0, Precision::fp8, 2});
    LayerState state(Fp8ScalingConfig{Fp8Scaling::current, 1, AmaxCompute::max, 0});
    std::vector<float> dweight(N * K, 0.f), dbias(N, 0.f);
    float amax[3];
    uint64_t saturated[3];
    const Inputs inputs = layer_inputs(23);
    run_step(*backend, state, inputs.x, inputs.w, inputs.bias, inputs.dy, dweight, dbias, amax, saturated);
    EXPECT_EQ(saturated[0] + saturated[1] + saturated[2], 0u);
    EXPECT_EQ(state.forward_values[1], fp8_max(Fp8Format::e4m3) / amax[1]);
}

}  // namespace
}  // namespace mixgpt
