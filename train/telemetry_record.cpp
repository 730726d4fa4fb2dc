#include "train/telemetry_record.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

namespace mixgpt {
namespace {

nlohmann::json number(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(); }

// Each histogram as {"layer", "zeros", "non_finite", "bins": [[e, count] of the nonzero bins]}.
nlohmann::ordered_json histograms_json(const std::vector<ExponentHistogram>& histograms) {
    nlohmann::ordered_json lines = nlohmann::ordered_json::array();
    for (const ExponentHistogram& histogram : histograms) {
        nlohmann::ordered_json bins = nlohmann::ordered_json::array();
        for (int bin = 1; bin + 1 < kExponentBins; ++bin)
            if (histogram.counts[static_cast<size_t>(bin)] != 0)
                bins.push_back({bin - 1 + kHistogramExponentMin, histogram.counts[static_cast<size_t>(bin)]});
        lines.push_back({{"layer", histogram.layer},
                         {"zeros", histogram.counts.front()},
                         {"non_finite", histogram.counts.back()},
                         {"bins", bins}});
    }
    return lines;
}

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
    line["grad_exponents"] = histograms_json(record.grad_exponents);
    line["output_exponents"] = histograms_json(record.output_exponents);
    if (!record.fp8.empty()) {
        nlohmann::ordered_json fp8 = nlohmann::ordered_json::array();
        for (const Fp8StepTensor& tensor : record.fp8)
            fp8.push_back({{"layer", tensor.layer},
                           {"role", tensor.role},
                           {"kind", tensor.kind},
                           {"amax", number(tensor.amax)},
                           {"scale", number(tensor.scale)},
                           {"saturated", tensor.saturated},
                           {"fp8_max", tensor.fp8_max},
                           {"headroom_bits", number(fp8_headroom_bits(tensor))}});
        line["fp8"] = fp8;
    }
    return line.dump();
}

double fp8_headroom_bits(const Fp8StepTensor& tensor) {
    return std::log2(tensor.fp8_max / (tensor.amax * tensor.scale));
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
    struct Fp8Sums {
        double headroom = std::numeric_limits<double>::infinity(), saturated = 0;
    };
    std::map<std::pair<int, std::string>, Fp8Sums> fp8;  // (layer, kind)
    for (const Fp8StepTensor& tensor : record.fp8) {
        if (tensor.layer < 0) continue;
        Fp8Sums& sums = fp8[{tensor.layer, tensor.kind}];
        sums.headroom = std::min(sums.headroom, fp8_headroom_bits(tensor));
        sums.saturated += static_cast<double>(tensor.saturated);
    }
    for (const auto& [key, sums] : fp8) {
        const std::string tail = "/" + std::to_string(key.first);
        scalars.emplace_back("telemetry/fp8_" + key.second + "_headroom_bits" + tail, sums.headroom);
        scalars.emplace_back("telemetry/fp8_" + key.second + "_saturated" + tail, sums.saturated);
    }
    return scalars;
}

std::vector<TensorBoardHistogram> telemetry_histograms(const TelemetryRecord& record) {
    std::vector<TensorBoardHistogram> histograms;
    const std::pair<const char*, const std::vector<ExponentHistogram>*> kinds[] = {
        {"telemetry/grad_log2/", &record.grad_exponents}, {"telemetry/output_log2/", &record.output_exponents}};
    for (const auto& [prefix, entries] : kinds)
        for (const ExponentHistogram& exponents : *entries) {
            int first = kExponentBins, last = 0;  // the nonzero finite bins' range
            for (int bin = 1; bin + 1 < kExponentBins; ++bin) {
                if (exponents.counts[static_cast<size_t>(bin)] == 0) continue;
                first = std::min(first, bin);
                last = bin;
            }
            if (first > last) continue;
            TensorBoardHistogram histogram;
            histogram.tag = prefix + (exponents.layer >= 0 ? std::to_string(exponents.layer) : "model");
            histogram.min = first - 1 + kHistogramExponentMin;
            histogram.max = last + kHistogramExponentMin;
            for (int bin = first; bin <= last; ++bin) {
                const double count = static_cast<double>(exponents.counts[static_cast<size_t>(bin)]);
                const double middle = bin - 1 + kHistogramExponentMin + 0.5;
                histogram.num += count;
                histogram.sum += count * middle;
                histogram.sum_squares += count * middle * middle;
                histogram.bucket_limit.push_back(bin + kHistogramExponentMin);
                histogram.bucket.push_back(count);
            }
            histograms.push_back(histogram);
        }
    return histograms;
}

}  // namespace mixgpt
