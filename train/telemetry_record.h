// What one measured step of train --telemetry-interval found (train/telemetry.h), and the forms it
// is written in: a metrics.jsonl line
//   {"type":"telemetry","step":100,"logit_amax":21.3,["loss_scale_headroom_bits":9.1,]
//    "blocks":[{"layer":0,"output_amax":12.5,"output_rms":1.02,"attention_lse_amax":6.1},...],
//    "tensors":[{"name":"h.0.attn.c_attn.weight","layer":0,"grad_norm":0.11,"weight_norm":7.9,
//                "update_ratio":0.0012,"grad_small_fraction":0.0,"grad_non_finite":0,"elements":...},...]}
// (non-finite numbers as null), and per-layer TensorBoard scalars (telemetry_scalars).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mixgpt {

struct TensorTelemetry {
    std::string name;  // ParameterLayout's
    int layer = -1;    // the block; -1: model-level
    double grad_norm = 0, weight_norm = 0, update_ratio = 0;
    double grad_small_fraction = 0;  // of its gradient elements, below the working dtype's smallest normal
    int64_t grad_non_finite = 0;
    int64_t elements = 0;  // real ones (a vocabulary-sized tensor's padding left out)
};

struct BlockTelemetry {
    int layer = 0;
    double output_amax = 0, output_rms = 0;
    double attention_lse_amax = 0;
};

struct TelemetryRecord {
    int64_t step = 0;  // optimizer steps completed, the measured one included
    std::vector<TensorTelemetry> tensors;
    std::vector<BlockTelemetry> blocks;
    double logit_amax = 0;
    double loss_scale_headroom_bits = -1;  // fp16 only; < 0: not measured
};

// The record as one metrics.jsonl line, without the newline.
std::string telemetry_json(const TelemetryRecord& record);

// Tag and value of each TensorBoard scalar of the record: telemetry/logit_amax,
// telemetry/loss_scale_headroom_bits (fp16), and per layer l telemetry/<quantity>/<l> of
// output_amax, output_rms and attention_lse_amax, and over the block's tensors grad_norm
// (their joint norm), update_ratio (the joint update's norm over the joint weight's) and
// grad_small_fraction (of all their elements).
std::vector<std::pair<std::string, double>> telemetry_scalars(const TelemetryRecord& record);

}  // namespace mixgpt
