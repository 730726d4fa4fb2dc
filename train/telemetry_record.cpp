#include "train/telemetry_record.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

namespace mixgpt {
namespace {

nlohmann::json number(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(); }

}  // namespace

std::string telemetry_json(const TelemetryRecord& record) {
    nlohmann::ordered_json line = {{"type", "telemetry"}, {"step", record.step}, {"logit_amax", number(record.logit_amax)}};
    if (record.loss_scale_headroom_bits >= 0) line["loss_scale_headroom_bits"] = number(record.loss_scale_headroom_bits);
    nlohmann::ordered_json blocks = nlohmann::ordered_json::array();
    for (const BlockTelemetry& block : record.blocks)
        blocks.push_back({{"layer", block.layer},
                          {"output_amax", number(block.output_amax)},
                          {"output_rms", number(block.output_rms)},
                          {"attention_lse_amax", number(block.attention_lse_amax)}});
    line["blocks"] = blocks;
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    for (const TensorTelemetry& tensor : record.tensors)
        tensors.push_back({{"name", tensor.name},
                           {"layer", tensor.layer},
                           {"grad_norm", number(tensor.grad_norm)},
                           {"weight_norm", number(tensor.weight_norm)},
                           {"update_ratio", number(tensor.update_ratio)},
                           {"grad_small_fraction", number(tensor.grad_small_fraction)},
                           {"grad_non_finite", tensor.grad_non_finite},
                           {"elements", tensor.elements}});
    line["tensors"] = tensors;
    return line.dump();
}

std::vector<std::pair<std::string, double>> telemetry_scalars(const TelemetryRecord& record) {
    std::vector<std::pair<std::string, double>> scalars = {{"telemetry/logit_amax", record.logit_amax}};
    if (record.loss_scale_headroom_bits >= 0)
        scalars.emplace_back("telemetry/loss_scale_headroom_bits", record.loss_scale_headroom_bits);
    struct LayerSums {
        double gradient = 0, update = 0, weight = 0, small = 0, elements = 0;
    };
    std::map<int, LayerSums> layers;
    for (const TensorTelemetry& tensor : record.tensors) {
        if (tensor.layer < 0) continue;
        LayerSums& sums = layers[tensor.layer];
        const double update = tensor.update_ratio * tensor.weight_norm;
        sums.gradient += tensor.grad_norm * tensor.grad_norm;
        sums.update += update * update;
        sums.weight += tensor.weight_norm * tensor.weight_norm;
        sums.small += tensor.grad_small_fraction * static_cast<double>(tensor.elements);
        sums.elements += static_cast<double>(tensor.elements);
    }
    for (const BlockTelemetry& block : record.blocks) {
        const std::string layer = "/" + std::to_string(block.layer);
        scalars.emplace_back("telemetry/output_amax" + layer, block.output_amax);
        scalars.emplace_back("telemetry/output_rms" + layer, block.output_rms);
        scalars.emplace_back("telemetry/attention_lse_amax" + layer, block.attention_lse_amax);
        const LayerSums& sums = layers[block.layer];
        scalars.emplace_back("telemetry/grad_norm" + layer, std::sqrt(sums.gradient));
        scalars.emplace_back("telemetry/update_ratio" + layer,
                             sums.weight > 0 ? std::sqrt(sums.update / sums.weight) : 0);
        scalars.emplace_back("telemetry/grad_small_fraction" + layer,
                             sums.elements > 0 ? sums.small / sums.elements : 0);
    }
    return scalars;
}

}  // namespace mixgpt
