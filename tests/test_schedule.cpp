// Learning-rate schedules: warm-up, the shape of each decay, and option validation. Expected
// values follow from the definitions (cos(pi/2) = 0 at the midpoint, linear interpolation).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "train/lr_schedule.h"

namespace mixgpt {
namespace {

LrSchedule schedule(LrDecay decay, int64_t warmup, int64_t total, double final_fraction = 0.1) {
    LrSchedule s;
    s.peak = 1e-3;
    s.warmup_steps = warmup;
    s.total_steps = total;
    s.decay = decay;
    s.final_fraction = final_fraction;
    s.validate();
    return s;
}

TEST(ScheduleTest, WarmupRisesLinearlyToThePeak) {
    const LrSchedule s = schedule(LrDecay::cosine, 10, 110);
    for (int64_t step = 0; step < 10; ++step)
        EXPECT_DOUBLE_EQ(s.learning_rate(step), 1e-3 * static_cast<double>(step + 1) / 10.0);
    EXPECT_DOUBLE_EQ(s.learning_rate(10), 1e-3);  // first decay step: progress 0
}

TEST(ScheduleTest, CosineAndLinearPassTheMidpointAndApproachTheFinalFraction) {
    for (LrDecay decay : {LrDecay::cosine, LrDecay::linear}) {
        const LrSchedule s = schedule(decay, 10, 110, 0.2);
        EXPECT_NEAR(s.learning_rate(60), 1e-3 * (1 + 0.2) / 2, 1e-15) << lr_decay_name(decay);
        const double last = s.learning_rate(109);
        EXPECT_GT(last, 0.2e-3);
        EXPECT_LT(last, 0.2e-3 + 0.8e-3 * 0.011);  // one step of 100 before the end
        for (int64_t step = 10; step < 109; ++step)
            EXPECT_GE(s.learning_rate(step), s.learning_rate(step + 1));
    }
}

TEST(ScheduleTest, ConstantStaysAtThePeak) {
    const LrSchedule s = schedule(LrDecay::constant, 5, 50);
    for (int64_t step = 5; step < 50; ++step) EXPECT_DOUBLE_EQ(s.learning_rate(step), 1e-3);
}

TEST(ScheduleTest, WarmupStableDecayHoldsThenDecaysOverTheLastFraction) {
    LrSchedule s = schedule(LrDecay::wsd, 0, 100, 0.0);
    s.decay_fraction = 0.25;
    for (int64_t step = 0; step <= 75; ++step) EXPECT_DOUBLE_EQ(s.learning_rate(step), 1e-3) << step;
    EXPECT_NEAR(s.learning_rate(76), 1e-3 * (1 - 1.0 / 25), 1e-15);
    EXPECT_NEAR(s.learning_rate(99), 1e-3 * (1 - 24.0 / 25), 1e-15);
}

TEST(ScheduleTest, ParsesNamesAndRejectsBadOptions) {
    for (LrDecay decay : {LrDecay::cosine, LrDecay::linear, LrDecay::constant, LrDecay::wsd})
        EXPECT_EQ(parse_lr_decay(lr_decay_name(decay)), decay);
    EXPECT_THROW(parse_lr_decay("exponential"), Error);
    LrSchedule s;
    s.warmup_steps = 5;
    s.total_steps = 4;
    EXPECT_THROW(s.validate(), Error);
    s.total_steps = 10;
    s.final_fraction = 1.5;
    EXPECT_THROW(s.validate(), Error);
}

}  // namespace
}  // namespace mixgpt
