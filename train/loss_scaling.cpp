#include "train/loss_scaling.h"

#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

constexpr float kDynamicInitialScale = 65536.f;  // 2^16

}  // namespace

LossScaleConfig LossScalePolicy::config() const {
    LossScaleConfig result;
    result.dynamic = mode == LossScaleMode::dynamic;
    result.growth_interval = growth_interval;
    return result;
}

StepStatus LossScalePolicy::initial_status() const {
    StepStatus status;
    status.loss_scale = initial_scale;
    return status;
}

std::string LossScalePolicy::describe() const {
    switch (mode) {
        case LossScaleMode::none:
            return "none";
        case LossScaleMode::fixed:
            return format("static %g", static_cast<double>(initial_scale));
        case LossScaleMode::dynamic:
            return format("dynamic (init %g, growth interval %d)", static_cast<double>(initial_scale),
                          growth_interval);
    }
    return "?";
}

LossScalePolicy parse_loss_scale(const std::string& text, Precision precision, int32_t growth_interval) {
    MIXGPT_REQUIRE(growth_interval >= 1, "loss-scale-growth-interval: must be at least 1");
    LossScalePolicy policy;
    policy.growth_interval = growth_interval;
    const std::string static_prefix = "static:";
    if (text == "auto") {
        if (precision == Precision::fp16) {
            policy.mode = LossScaleMode::dynamic;
            policy.initial_scale = kDynamicInitialScale;
        }
    } else if (text == "dynamic") {
        policy.mode = LossScaleMode::dynamic;
        policy.initial_scale = kDynamicInitialScale;
    } else if (text == "none") {
        policy.mode = LossScaleMode::none;
    } else if (text.compare(0, static_prefix.size(), static_prefix) == 0) {
        const std::string number = text.substr(static_prefix.size());
        char* end = nullptr;
        const double value = std::strtod(number.c_str(), &end);
        MIXGPT_REQUIRE(!number.empty() && end == number.c_str() + number.size() && std::isfinite(value) &&
                           value > 0 && value <= 16777216.0,
                       "loss-scale: '" + text + "' needs a positive number up to 2^24 after 'static:'");
        policy.mode = LossScaleMode::fixed;
        policy.initial_scale = static_cast<float>(value);
    } else {
        throw Error("loss-scale: unknown value '" + text +
                    "' (expected auto, dynamic, static:<value> or none)");
    }
    return policy;
}

}  // namespace mixgpt
