// What the precision study reads of its runs' telemetry (train --telemetry-interval, which the
// study sets to its evaluation interval; train/telemetry.h): per measured step and layer, the
// block output's max |x|, the fraction of the block's gradient elements below the working
// dtype's smallest normal and, in fp8 runs, the least headroom of its FP8 tensors; and where a run
// departs most from the fp32 run of its seed.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

namespace mixgpt {

struct StudyLayerTelemetry {
    double output_amax = 0;
    double grad_small_fraction = 0;  // over the block's parameter tensors' elements
    // fp8 runs: the least headroom_bits of the block's FP8 tensors (train/telemetry_record.h);
    // +Inf without any
    double fp8_headroom_bits = INFINITY;
};

using StudyTelemetry = std::map<int64_t, std::vector<StudyLayerTelemetry>>;  // step -> per layer

// From a run's telemetry records (metrics.jsonl's "telemetry" lines, by step); throws Error
// naming the step when a record lacks its blocks or tensors.
StudyTelemetry study_telemetry(const std::map<int64_t, nlohmann::ordered_json>& records);

// The largest departure of a run from a reference run over the steps and layers both measured.
struct TelemetryDeparture {
    int layer = -1;  // -1: nothing to compare
    int64_t step = 0;
    double value = 0;  // the run's quantity over the reference's, or its excess (underflow)
};
struct TelemetryDepartures {
    TelemetryDeparture amax;       // the block output's max |x|: the largest |log2(run / reference)|
    TelemetryDeparture underflow;  // the gradient underflow: the largest run - reference
    TelemetryDeparture fp8_headroom;  // fp8 runs: the run's least FP8 headroom (bits; below 0: saturated)
};
TelemetryDepartures telemetry_departures(const StudyTelemetry& run, const StudyTelemetry& reference);

}  // namespace mixgpt
