#include "study/study_telemetry.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace mixgpt {

StudyTelemetry study_telemetry(const std::map<int64_t, nlohmann::ordered_json>& records) {
    StudyTelemetry telemetry;
    for (const auto& [step, record] : records) {
        MIXGPT_REQUIRE(record.contains("blocks") && record.contains("tensors"),
                       "telemetry record of step " + std::to_string(step) + ": needs blocks and tensors");
        std::vector<StudyLayerTelemetry> layers(record["blocks"].size());
        std::vector<double> small(layers.size(), 0), elements(layers.size(), 0);
        for (size_t l = 0; l < layers.size(); ++l) {
            const nlohmann::ordered_json& amax = record["blocks"][l]["output_amax"];
            layers[l].output_amax = amax.is_number() ? amax.get<double>() : NAN;
        }
        for (const nlohmann::ordered_json& tensor : record["tensors"]) {
            const int layer = tensor["layer"].get<int>();
            if (layer < 0 || layer >= static_cast<int>(layers.size())) continue;
            const double count = tensor["elements"].get<double>();
            const nlohmann::ordered_json& fraction = tensor["grad_small_fraction"];
            small[static_cast<size_t>(layer)] += (fraction.is_number() ? fraction.get<double>() : NAN) * count;
            elements[static_cast<size_t>(layer)] += count;
        }
        for (size_t l = 0; l < layers.size(); ++l)
            layers[l].grad_small_fraction = elements[l] > 0 ? small[l] / elements[l] : 0;
        if (record.contains("fp8"))
            for (const nlohmann::ordered_json& tensor : record["fp8"]) {
                const int layer = tensor["layer"].get<int>();
                const nlohmann::ordered_json& headroom = tensor["headroom_bits"];
                if (layer < 0 || layer >= static_cast<int>(layers.size()) || !headroom.is_number()) continue;
                double& least = layers[static_cast<size_t>(layer)].fp8_headroom_bits;
                least = std::min(least, headroom.get<double>());
            }
        telemetry[step] = std::move(layers);
    }
    return telemetry;
}

TelemetryDepartures telemetry_departures(const StudyTelemetry& run, const StudyTelemetry& reference) {
    TelemetryDepartures departures;
    double largest_log_ratio = -1, largest_excess = -INFINITY, least_headroom = INFINITY;
    for (const auto& [step, layers] : run)
        for (size_t l = 0; l < layers.size(); ++l)
            if (layers[l].fp8_headroom_bits < least_headroom) {
                least_headroom = layers[l].fp8_headroom_bits;
                departures.fp8_headroom = {static_cast<int>(l), step, least_headroom};
            }
    for (const auto& [step, layers] : run) {
        const auto other = reference.find(step);
        if (other == reference.end()) continue;
        for (size_t l = 0; l < layers.size() && l < other->second.size(); ++l) {
            const StudyLayerTelemetry &mine = layers[l], &theirs = other->second[l];
            const double log_ratio = std::fabs(std::log2(mine.output_amax / theirs.output_amax));
            if (std::isfinite(log_ratio) && log_ratio > largest_log_ratio) {
                largest_log_ratio = log_ratio;
                departures.amax = {static_cast<int>(l), step, mine.output_amax / theirs.output_amax};
            }
            const double excess = mine.grad_small_fraction - theirs.grad_small_fraction;
            if (std::isfinite(excess) && excess > largest_excess) {
                largest_excess = excess;
                departures.underflow = {static_cast<int>(l), step, excess};
            }
        }
    }
    return departures;
}

}  // namespace mixgpt
