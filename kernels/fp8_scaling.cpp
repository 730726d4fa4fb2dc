#include "kernels/fp8_scaling.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace mixgpt {

const char* fp8_scaling_name(Fp8Scaling scaling) {
    return scaling == Fp8Scaling::delayed ? "delayed" : "current";
}

Fp8Scaling parse_fp8_scaling(const std::string& name) {
    if (name == "delayed") return Fp8Scaling::delayed;
    if (name == "current") return Fp8Scaling::current;
    throw Error("unknown FP8 scaling '" + name + "' (expected delayed or current)");
}

const char* amax_compute_name(AmaxCompute compute) {
    return compute == AmaxCompute::max ? "max" : "most_recent";
}

AmaxCompute parse_amax_compute(const std::string& name) {
    if (name == "max") return AmaxCompute::max;
    if (name == "most_recent") return AmaxCompute::most_recent;
    throw Error("unknown amax computation '" + name + "' (expected max or most_recent)");
}

void check_fp8_scaling_config(const Fp8ScalingConfig& config) {
    MIXGPT_REQUIRE(config.history_length >= 1 && config.history_length <= kMaxAmaxHistory,
                   "fp8 amax history: " + std::to_string(config.history_length) + " steps is not in 1.." +
                       std::to_string(kMaxAmaxHistory));
    MIXGPT_REQUIRE(
        config.margin >= 0 && config.margin <= kMaxMargin,
        "fp8 margin: " + std::to_string(config.margin) + " is not in 0.." + std::to_string(kMaxMargin));
}

float fp8_scaled_max(Fp8Format format, int margin) { return std::ldexp(fp8_max(format), -margin); }

float fp8_scale_from_amax(float amax, float scaled_max, float fallback) {
    if (!std::isfinite(amax) || !(amax > 0.f)) return fallback;
    const float scale = scaled_max / amax;
    return std::isinf(scale) ? std::numeric_limits<float>::max() : scale;
}

Fp8ScalingState::Fp8ScalingState(int tensors, Fp8Format format, const Fp8ScalingConfig& config)
    : tensors_(tensors),
      format_(format),
      config_(config),
      scaled_max_(fp8_scaled_max(format, config.margin)) {
    check_fp8_scaling_config(config);
    MIXGPT_REQUIRE(tensors >= 0, "fp8 scaling state: negative tensor count");
    values_.assign(flat_size(tensors, config.history_length), 0.f);
    for (int t = 0; t < 2 * tensors; ++t) values_[static_cast<size_t>(t)] = 1.f;
    saturated_.assign(static_cast<size_t>(tensors), 0);
}

float Fp8ScalingState::amax_history(int tensor, int steps_ago) const {
    return values_[static_cast<size_t>(2 * tensors_ + tensor * config_.history_length + steps_ago)];
}

void Fp8ScalingState::record(int tensor, const Fp8QuantizeStats& stats) {
    float& slot = history(tensor)[0];
    slot = stats.amax > slot ? stats.amax : slot;
    saturated_[static_cast<size_t>(tensor)] += stats.saturated;
}

void Fp8ScalingState::update_delayed() {
    const int length = config_.history_length;
    for (int t = 0; t < tensors_; ++t) {
        float* slots = history(t);
        float amax = slots[0];
        if (config_.amax_compute == AmaxCompute::max) {
            amax = 0.f;
            for (int i = 0; i < length; ++i) amax = std::fmax(amax, slots[i]);
        }
        const float scale = fp8_scale_from_amax(amax, scaled_max_, values_[static_cast<size_t>(t)]);
        values_[static_cast<size_t>(t)] = scale;
        values_[static_cast<size_t>(tensors_ + t)] = 1.f / scale;
        for (int i = length - 1; i > 0; --i) slots[i] = slots[i - 1];
        slots[0] = 0.f;
    }
}

void Fp8ScalingState::update_current(int tensor, float amax) {
    const float scale = fp8_scale_from_amax(amax, scaled_max_, 1.f);
    values_[static_cast<size_t>(tensor)] = scale;
    values_[static_cast<size_t>(tensors_ + tensor)] = 1.f / scale;
}

void Fp8ScalingState::reset_saturated() { saturated_.assign(saturated_.size(), 0); }

size_t Fp8ScalingState::flat_size(int tensors, int history_length) {
    return static_cast<size_t>(tensors) * static_cast<size_t>(2 + history_length);
}

void Fp8ScalingState::load_flat(const std::vector<float>& values) {
    MIXGPT_REQUIRE(values.size() == values_.size(),
                   "fp8 scaling state: " + std::to_string(values.size()) + " values, expected " +
                       std::to_string(values_.size()) + " (" + std::to_string(tensors_) +
                       " tensors, history " + std::to_string(config_.history_length) + ")");
    for (int t = 0; t < 2 * tensors_; ++t) {
        const float scale = values[static_cast<size_t>(t)];
        MIXGPT_REQUIRE(std::isfinite(scale) && scale > 0.f,
                       "fp8 scaling state: scale " + std::to_string(t) + " is not finite and positive");
    }
    values_ = values;
}

}  // namespace mixgpt
