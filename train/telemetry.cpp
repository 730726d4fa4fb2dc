#include "train/telemetry.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace mixgpt {
namespace {

// The smallest normal and largest finite values of a working dtype (bf16 has fp32's exponents).
double smallest_normal(DType dtype) { return dtype == DType::f16 ? std::ldexp(1.0, -14) : std::ldexp(1.0, -126); }
constexpr double kFp16Largest = 65504.0;

}  // namespace

double gradient_zero_fraction(GPT& model, const std::vector<ElementRange>& owned, Communicator& communicator) {
    // On the backend, range by range: the elements below the smallest positive float are the zeros.
    Backend& backend = model.backend();
    const Buffer statistics = backend.allocate(sizeof(TensorStatistics));
    const TensorView all = model.gradients();  // (n) f32
    double counts[2] = {0, 0};                 // zeros, elements
    for (const ElementRange& range : owned) {
        backend.tensor_statistics(statistics.as<TensorStatistics>(), slice_elements(all, range), TensorView(),
                                  std::numeric_limits<float>::denorm_min());
        TensorStatistics read;
        backend.copy_to_host(&read, statistics.data(), sizeof read);
        counts[0] += read.small;
        counts[1] += static_cast<double>(range.count());
    }
    communicator.all_reduce_sum_host(counts, 2);
    return counts[1] > 0 ? counts[0] / counts[1] : 0;
}

Telemetry::Telemetry(GPT& model, Backend& backend, int interval)
    : model_(model), backend_(backend), interval_(interval) {
    MIXGPT_REQUIRE(interval > 0, "telemetry-interval: must be positive (0: no telemetry)");
    MIXGPT_REQUIRE(model.keeps_all_masters(),
                   "telemetry-interval: needs every fp32 master on the rank, which --zero shards");
    small_ = static_cast<float>(smallest_normal(model.working_parameters().dtype));
    tensor_count_ = model.layout().views().size();
    const size_t slots = 3 * tensor_count_ + 2 * static_cast<size_t>(model.config().n_layer) + 1;
    statistics_ = backend.allocate(slots * sizeof(TensorStatistics));
    masters_before_ = backend.allocate(static_cast<size_t>(model.layout().total()) * sizeof(float));
}

TensorStatistics* Telemetry::slot(size_t index) const { return statistics_.as<TensorStatistics>() + index; }

void Telemetry::before_step() {
    backend_.copy_within(masters_before_.data(), model_.master_parameters().data, masters_before_.bytes());
    const size_t blocks = 3 * tensor_count_, layers = static_cast<size_t>(model_.config().n_layer);
    model_.record_statistics({slot(blocks), slot(blocks + layers), slot(blocks + 2 * layers), small_});
}

TelemetryRecord Telemetry::after_step(int64_t steps_done, float loss_scale) {
    model_.record_statistics({});
    const TensorView masters = model_.master_parameters(), gradients = model_.gradients();
    float* before = masters_before_.as<float>();  // (n) f32
    const std::vector<ParameterView>& views = model_.layout().views();
    for (size_t i = 0; i < views.size(); ++i) {
        const ParameterView& view = views[i];
        const int64_t count = view.real_rows * (view.numel / view.shape[0]);
        const auto part = [&](const TensorView& arena) {
            return TensorView(arena.as<float>() + view.offset, DType::f32, {count});
        };
        backend_.tensor_statistics(slot(3 * i), part(gradients), TensorView(), small_);
        backend_.tensor_statistics(slot(3 * i + 1), part(masters), TensorView(), small_);
        backend_.tensor_statistics(slot(3 * i + 2), part(masters),
                                   TensorView(before + view.offset, DType::f32, {count}), small_);
    }
    const size_t layers = static_cast<size_t>(model_.config().n_layer);
    std::vector<TensorStatistics> read(3 * tensor_count_ + 2 * layers + 1);
    backend_.copy_to_host(read.data(), statistics_.data(), read.size() * sizeof(TensorStatistics));

    TelemetryRecord record;
    record.step = steps_done;
    double gradient_amax = 0;
    for (size_t i = 0; i < views.size(); ++i) {
        const TensorStatistics &gradient = read[3 * i], &weight = read[3 * i + 1], &update = read[3 * i + 2];
        const ParameterView& view = views[i];
        const double count = static_cast<double>(view.real_rows * (view.numel / view.shape[0]));
        TensorTelemetry tensor;
        tensor.name = view.name;
        tensor.layer = view.layer;
        tensor.grad_norm = std::sqrt(gradient.sum_squares) / loss_scale;
        tensor.weight_norm = std::sqrt(weight.sum_squares);
        tensor.update_ratio = tensor.weight_norm > 0 ? std::sqrt(update.sum_squares) / tensor.weight_norm : 0;
        tensor.grad_small_fraction = count > 0 ? gradient.small / count : 0;
        tensor.grad_non_finite = static_cast<int64_t>(gradient.non_finite);
        tensor.elements = static_cast<int64_t>(count);
        gradient_amax = std::max(gradient_amax, gradient.amax);
        record.tensors.push_back(tensor);
    }
    const size_t first_block = 3 * tensor_count_;
    const double width = model_.config().n_embd;
    for (size_t l = 0; l < layers; ++l) {
        const TensorStatistics &output = read[first_block + l], &lse = read[first_block + layers + l];
        // The output's element count: the last forward's rows times the width.
        const double elements = static_cast<double>(model_.last_tokens()) * width;
        record.blocks.push_back({static_cast<int>(l), output.amax,
                                 elements > 0 ? std::sqrt(output.sum_squares / elements) : 0, lse.amax});
    }
    record.logit_amax = read[first_block + 2 * layers].amax;
    if (model_.working_parameters().dtype == DType::f16 && gradient_amax > 0)
        record.loss_scale_headroom_bits = std::log2(kFp16Largest / gradient_amax);
    return record;
}

}  // namespace mixgpt
