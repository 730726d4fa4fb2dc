// kernels/fp8_scaling.h: delayed scaling against a plain model of Transformer Engine's rule (a
// window of the last N amaxes, its max or its newest, scale = fp8_max · 2^-margin / amax, the
// previous scale kept when amax is 0 or not finite, FLT_MAX when the division overflows), current
// scaling, saturation counts, and the flat form a checkpoint keeps.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <limits>
#include <random>
#include <vector>

#include "core/error.h"
#include "kernels/fp8_scaling.h"

namespace mixgpt {
namespace {

// TE's rule over an explicit window, newest first.
struct WindowModel {
    int length;
    AmaxCompute compute;
    float scaled_max;
    std::deque<float> window;  // the last `length` step amaxes, newest first
    float scale = 1.f;

    void step(float amax) {
        window.push_front(amax);
        if (static_cast<int>(window.size()) > length) window.pop_back();
        float chosen = window.front();
        if (compute == AmaxCompute::max) {
            chosen = 0.f;
            for (const float a : window)
                if (a > chosen) chosen = a;  // NaN never compares greater: ignored
        }
        if (std::isfinite(chosen) && chosen > 0.f) {
            scale = scaled_max / chosen;
            if (std::isinf(scale)) scale = std::numeric_limits<float>::max();
        }
    }
};

TEST(Fp8Scaling, DelayedScalingFollowsTheWindowModelStepByStep) {
    std::mt19937 random(3);
    std::lognormal_distribution<float> amaxes(0.f, 3.f);
    for (const AmaxCompute compute : {AmaxCompute::max, AmaxCompute::most_recent})
        for (const int length : {1, 4, 16})
            for (const int margin : {0, 2}) {
                const Fp8ScalingConfig config{Fp8Scaling::delayed, length, compute, margin};
                Fp8ScalingState state(2, Fp8Format::e4m3, config);
                WindowModel model{length, compute, std::ldexp(448.f, -margin), {}};
                for (int step = 0; step < 40; ++step) {
                    float amax = amaxes(random);
                    if (step % 13 == 5) amax = 0.f;
                    if (step % 17 == 7) amax = NAN;
                    if (step == 30) amax = INFINITY;
                    // Two quantizations in the step (micro-batches): the larger is what counts.
                    state.record(1, {amax, 0});
                    state.record(1, {amax / 2, 0});
                    model.step(amax);
                    state.update_delayed();
                    SCOPED_TRACE(testing::Message() << amax_compute_name(compute) << " length " << length
                                                    << " margin " << margin << " step " << step);
                    ASSERT_EQ(state.scale(1), model.scale);
                    ASSERT_EQ(state.scale_inverse(1), 1.f / model.scale);
                    ASSERT_EQ(state.scale(0), 1.f);  // tensor 0 recorded nothing: amax 0, scale kept
                    ASSERT_EQ(state.amax_history(1, 0), 0.f);
                }
            }
}

TEST(Fp8Scaling, HistoryShiftsOneSlotPerStepAndForgetsTheOldest) {
    Fp8ScalingState state(1, Fp8Format::e4m3, {Fp8Scaling::delayed, 3, AmaxCompute::max, 0});
    for (const float amax : {8.f, 2.f, 4.f, 1.f}) {
        state.record(0, {amax, 0});
        state.update_delayed();
    }
    EXPECT_EQ(state.amax_history(0, 0), 0.f);
    EXPECT_EQ(state.amax_history(0, 1), 1.f);
    EXPECT_EQ(state.amax_history(0, 2), 4.f);
    EXPECT_EQ(state.scale(0), 448.f / 4.f);  // the window holds 2, 4, 1: 8 has left it
}

TEST(Fp8Scaling, ScaleFromAmaxFollowsTransformerEngine) {
    const float max = std::numeric_limits<float>::max();
    EXPECT_EQ(fp8_scale_from_amax(3.5f, 448.f, 7.f), 128.f);
    EXPECT_EQ(fp8_scale_from_amax(0.f, 448.f, 7.f), 7.f);
    EXPECT_EQ(fp8_scale_from_amax(INFINITY, 448.f, 7.f), 7.f);
    EXPECT_EQ(fp8_scale_from_amax(NAN, 448.f, 7.f), 7.f);
    EXPECT_EQ(fp8_scale_from_amax(1e-38f, 448.f, 7.f), max);  // 448 / 1e-38 overflows fp32
    EXPECT_EQ(fp8_scaled_max(Fp8Format::e5m2, 3), 57344.f / 8);
}

TEST(Fp8Scaling, CurrentScalingUsesTheTensorsOwnAmaxAndOneWhenItIsUseless) {
    Fp8ScalingState state(2, Fp8Format::e5m2, {Fp8Scaling::current, 1, AmaxCompute::max, 0});
    state.update_current(0, 2.f);
    EXPECT_EQ(state.scale(0), 57344.f / 2.f);
    EXPECT_EQ(state.scale_inverse(0), 2.f / 57344.f);
    state.update_current(0, 0.f);
    EXPECT_EQ(state.scale(0), 1.f);
    state.update_current(1, NAN);
    EXPECT_EQ(state.scale(1), 1.f);
}

TEST(Fp8Scaling, SaturationCountsAddUpPerTensorUntilReset) {
    Fp8ScalingState state(2, Fp8Format::e4m3, {});
    state.record(0, {1.f, 3});
    state.record(0, {1.f, 4});
    state.record(1, {1.f, 1});
    EXPECT_EQ(state.saturated(0), 7u);
    EXPECT_EQ(state.saturated(1), 1u);
    state.reset_saturated();
    EXPECT_EQ(state.saturated(0), 0u);
}

TEST(Fp8Scaling, FlatFormRestoresAStateThatContinuesIdentically) {
    const Fp8ScalingConfig config{Fp8Scaling::delayed, 5, AmaxCompute::max, 1};
    Fp8ScalingState original(3, Fp8Format::e4m3, config);
    for (int step = 0; step < 4; ++step) {
        for (int t = 0; t < 3; ++t) original.record(t, {static_cast<float>(1 + step * 3 + t), 0});
        original.update_delayed();
    }
    ASSERT_EQ(original.flat().size(), Fp8ScalingState::flat_size(3, 5));
    Fp8ScalingState restored(3, Fp8Format::e4m3, config);
    restored.load_flat(original.flat());
    for (Fp8ScalingState* state : {&original, &restored}) {
        for (int t = 0; t < 3; ++t) state->record(t, {0.5f, 0});
        state->update_delayed();
    }
    EXPECT_EQ(restored.flat(), original.flat());
}

TEST(Fp8Scaling, BadConfigsAndFlatFormsAreRefused) {
    EXPECT_THROW(Fp8ScalingState(1, Fp8Format::e4m3, {Fp8Scaling::delayed, 0, AmaxCompute::max, 0}), Error);
    EXPECT_THROW(
        Fp8ScalingState(1, Fp8Format::e4m3, {Fp8Scaling::delayed, kMaxAmaxHistory + 1, AmaxCompute::max, 0}),
        Error);
    EXPECT_THROW(Fp8ScalingState(1, Fp8Format::e4m3, {Fp8Scaling::delayed, 4, AmaxCompute::max, -1}), Error);
    Fp8ScalingState state(2, Fp8Format::e4m3, {Fp8Scaling::delayed, 4, AmaxCompute::max, 0});
    EXPECT_THROW(state.load_flat(std::vector<float>(5, 1.f)), Error);
    std::vector<float> flat = state.flat();
    flat[1] = 0.f;
    EXPECT_THROW(state.load_flat(flat), Error);
    EXPECT_EQ(parse_fp8_scaling("current"), Fp8Scaling::current);
    EXPECT_EQ(parse_amax_compute("most_recent"), AmaxCompute::most_recent);
    EXPECT_THROW(parse_amax_compute("mean"), Error);
}

}  // namespace
}  // namespace mixgpt
