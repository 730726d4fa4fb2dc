#include "train/lr_schedule.h"

#include <cmath>

#include "core/error.h"

namespace mixgpt {

LrDecay parse_lr_decay(const std::string& name) {
    if (name == "cosine") return LrDecay::cosine;
    if (name == "linear") return LrDecay::linear;
    if (name == "constant") return LrDecay::constant;
    if (name == "wsd") return LrDecay::wsd;
    throw Error("unknown learning-rate schedule '" + name + "' (expected cosine, linear, constant or wsd)");
}

const char* lr_decay_name(LrDecay decay) {
    switch (decay) {
        case LrDecay::cosine:
            return "cosine";
        case LrDecay::linear:
            return "linear";
        case LrDecay::constant:
            return "constant";
        case LrDecay::wsd:
            return "wsd";
    }
    return "?";
}

void LrSchedule::validate() const {
    MIXGPT_REQUIRE(std::isfinite(peak) && peak > 0, "lr: must be a positive number");
    MIXGPT_REQUIRE(total_steps >= 1, "steps: must be at least 1");
    MIXGPT_REQUIRE(warmup_steps >= 0 && warmup_steps <= total_steps,
                   "warmup-steps: must lie in [0, steps = " + std::to_string(total_steps) + "]");
    MIXGPT_REQUIRE(final_fraction >= 0 && final_fraction <= 1, "final-lr-fraction: must lie in [0, 1]");
    MIXGPT_REQUIRE(decay_fraction > 0 && decay_fraction <= 1, "decay-fraction: must lie in (0, 1]");
}

double LrSchedule::learning_rate(int64_t step) const {
    if (step < warmup_steps) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    if (step >= total_steps) step = total_steps - 1;
    const double decay_steps = static_cast<double>(total_steps - warmup_steps);
    const double progress = decay_steps > 0 ? static_cast<double>(step - warmup_steps) / decay_steps : 0.0;
    const double f = final_fraction;
    switch (decay) {
        case LrDecay::cosine:
            return peak * (f + (1 - f) * 0.5 * (1 + std::cos(M_PI * progress)));
        case LrDecay::linear:
            return peak * (1 - (1 - f) * progress);
        case LrDecay::constant:
            return peak;
        case LrDecay::wsd: {
            const double stable_end = 1 - decay_fraction;
            if (progress < stable_end) return peak;
            return peak * (1 - (1 - f) * (progress - stable_end) / decay_fraction);
        }
    }
    return peak;
}

}  // namespace mixgpt
