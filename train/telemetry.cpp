#include "train/telemetry.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace mixgpt {
namespace {

// The smallest normal and largest finite values of a working dtype (bf16 has fp32's exponents).
double smallest_normal(DType dtype) { return dtype == DType::f16 ? std::ldexp(1.0, -14) : std::ldexp(1.0, -126); }
constexpr double kFp16Largest = 65504.0;

size_t statistics_bytes(const GPTConfig& config, size_t segments) {
    const size_t layers = static_cast<size_t>(config.n_layer);
    // The statistics, then the gradients' exponent bins (each block's, then the other tensors'),
    // then the block outputs'.
    return (3 * segments + 2 * layers + 1) * sizeof(TensorStatistics) +
           (2 * layers + 1) * kExponentBins * sizeof(uint64_t);
}

// The parts of the layout's views (their real elements) among the masters a model keeps: all of
// them in order, or (ZeRO-1) their intersections with the pieces, at their places in the shard.
std::vector<Telemetry::Segment> kept_segments(const GPT& model) {
    std::vector<ElementRange> pieces = model.master_pieces();
    if (pieces.empty()) pieces.push_back({0, model.layout().total()});
    std::vector<Telemetry::Segment> segments;
    const std::vector<ParameterView>& views = model.layout().views();
    for (size_t i = 0; i < views.size(); ++i) {
        const ParameterView& view = views[i];
        const int64_t begin = view.offset, end = view.offset + view.real_rows * (view.numel / view.shape[0]);
        int64_t stored = 0;  // the shard's elements before the piece
        for (const ElementRange& piece : pieces) {
            const int64_t first = std::max(begin, piece.begin), last = std::min(end, piece.end);
            if (first < last) segments.push_back({i, stored + first - piece.begin, last - first});
            stored += piece.count();
        }
    }
    return segments;
}

// Every rank's value of `value`, by a sum over the ranks of a vector that holds it at the rank's
// place: the largest of them.
double all_ranks_max(double value, Communicator& communicator) {
    std::vector<double> values(static_cast<size_t>(communicator.world_size()), 0.0);
    values[static_cast<size_t>(communicator.rank())] = value;
    communicator.all_reduce_sum_host(values.data(), static_cast<int>(values.size()));
    return *std::max_element(values.begin(), values.end());
}

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

size_t telemetry_bytes(const GPTConfig& config, Precision precision, int history_length, int64_t kept_masters) {
    const ParameterLayout layout(config);
    const int64_t masters = kept_masters > 0 ? kept_masters : layout.total();
    size_t bytes = static_cast<size_t>(masters) * sizeof(float) + statistics_bytes(config, layout.views().size());
    if (precision == Precision::fp8) {
        const int linears = 4 * config.n_layer + 1;  // model/fp8_linears.h: forward 2 per linear, backward 1
        bytes += 3 * static_cast<size_t>(linears) * sizeof(uint64_t) +
                 (Fp8ScalingState::flat_size(2 * linears, history_length) +
                  Fp8ScalingState::flat_size(linears, history_length)) * sizeof(float);
    }
    return bytes;
}

Telemetry::Telemetry(GPT& model, Backend& backend, int interval, Communicator& communicator)
    : model_(model), backend_(backend), communicator_(communicator), interval_(interval) {
    MIXGPT_REQUIRE(interval > 0, "telemetry-interval: must be positive (0: no telemetry)");
    small_ = static_cast<float>(smallest_normal(model.working_parameters().dtype));
    segments_ = kept_segments(model);
    statistics_count_ = 3 * segments_.size() + 2 * static_cast<size_t>(model.config().n_layer) + 1;
    statistics_ = backend.allocate(statistics_bytes(model.config(), segments_.size()));
    masters_before_ = backend.allocate(static_cast<size_t>(model.master_parameters().numel()) * sizeof(float));
}

TensorStatistics* Telemetry::slot(size_t index) const { return statistics_.as<TensorStatistics>() + index; }

void Telemetry::before_step() {
    backend_.copy_within(masters_before_.data(), model_.master_parameters().data, masters_before_.bytes());
    const size_t blocks = 3 * segments_.size(), layers = static_cast<size_t>(model_.config().n_layer);
    uint64_t* output_exponents = reinterpret_cast<uint64_t*>(slot(statistics_count_)) + (layers + 1) * kExponentBins;
    model_.record_statistics({slot(blocks), slot(blocks + layers), slot(blocks + 2 * layers), output_exponents, small_});
    if (Fp8Linears* fp8 = model_.fp8()) fp8->keep_next_step();
}

TelemetryRecord Telemetry::after_step(int64_t steps_done, float loss_scale, const TensorView& kept_gradients) {
    model_.record_statistics({});
    const TensorView masters = model_.master_parameters();  // (kept) f32
    const std::vector<ParameterView>& views = model_.layout().views();
    const size_t layers = static_cast<size_t>(model_.config().n_layer);
    // (layers + 1, kExponentBins): each block's gradient exponents, then the other tensors'.
    uint64_t* exponents = reinterpret_cast<uint64_t*>(slot(statistics_count_));
    backend_.fill_zero(exponents, (layers + 1) * kExponentBins * sizeof(uint64_t));
    for (size_t k = 0; k < segments_.size(); ++k) {
        const Segment& segment = segments_[k];
        const auto part = [&](const void* kept) {
            return TensorView(const_cast<float*>(static_cast<const float*>(kept)) + segment.kept_offset, DType::f32,
                              {segment.count});
        };
        const TensorView gradient = part(kept_gradients.data);
        backend_.tensor_statistics(slot(3 * k), gradient, TensorView(), small_);
        const int layer = views[segment.view].layer;
        backend_.exponent_histogram(exponents + (layer >= 0 ? static_cast<size_t>(layer) : layers) * kExponentBins,
                                    gradient);
        backend_.tensor_statistics(slot(3 * k + 1), part(masters.data), TensorView(), small_);
        backend_.tensor_statistics(slot(3 * k + 2), part(masters.data), part(masters_before_.data()), small_);
    }
    std::vector<TensorStatistics> read(statistics_count_);
    std::vector<uint64_t> exponent_counts((layers + 1) * kExponentBins), output_counts(layers * kExponentBins);
    {
        std::vector<char> bytes(statistics_.bytes());
        backend_.copy_to_host(bytes.data(), statistics_.data(), bytes.size());
        const char* at = bytes.data();
        for (auto [destination, size] : {std::pair<void*, size_t>{read.data(), read.size() * sizeof(TensorStatistics)},
                                         {exponent_counts.data(), exponent_counts.size() * sizeof(uint64_t)},
                                         {output_counts.data(), output_counts.size() * sizeof(uint64_t)}}) {
            std::memcpy(destination, at, size);
            at += size;
        }
    }

    // Per view: the sums of squares and counts of its gradient, weight and update (9 each), its
    // segments' added here and, with sharded masters, over the ranks; the gradients' amax.
    std::vector<double> sums(9 * views.size() + exponent_counts.size(), 0.0);
    double gradient_amax = 0;
    for (size_t k = 0; k < segments_.size(); ++k) {
        double* view_sums = &sums[9 * segments_[k].view];
        for (int kind = 0; kind < 3; ++kind) {
            const TensorStatistics& part = read[3 * k + static_cast<size_t>(kind)];
            view_sums[3 * kind] += part.sum_squares;
            view_sums[3 * kind + 1] += part.small;
            view_sums[3 * kind + 2] += part.non_finite;
        }
        gradient_amax = std::max(gradient_amax, read[3 * k].amax);
    }
    for (size_t b = 0; b < exponent_counts.size(); ++b) sums[9 * views.size() + b] = static_cast<double>(exponent_counts[b]);
    if (!model_.keeps_all_masters()) {
        communicator_.all_reduce_sum_host(sums.data(), static_cast<int>(sums.size()));
        gradient_amax = all_ranks_max(gradient_amax, communicator_);
    }

    TelemetryRecord record;
    record.step = steps_done;
    for (size_t i = 0; i < views.size(); ++i) {
        const double* gradient = &sums[9 * i];
        const double* weight = gradient + 3;
        const double* update = gradient + 6;
        const ParameterView& view = views[i];
        const double count = static_cast<double>(view.real_rows * (view.numel / view.shape[0]));
        TensorTelemetry tensor;
        tensor.name = view.name;
        tensor.layer = view.layer;
        tensor.grad_norm = std::sqrt(gradient[0]) / loss_scale;
        tensor.weight_norm = std::sqrt(weight[0]);
        tensor.update_ratio = tensor.weight_norm > 0 ? std::sqrt(update[0]) / tensor.weight_norm : 0;
        tensor.grad_small_fraction = count > 0 ? gradient[1] / count : 0;
        tensor.grad_non_finite = static_cast<int64_t>(gradient[2]);
        tensor.elements = static_cast<int64_t>(count);
        record.tensors.push_back(tensor);
    }
    const size_t first_block = 3 * segments_.size();
    const double width = model_.config().n_embd;
    for (size_t l = 0; l < layers; ++l) {
        const TensorStatistics &output = read[first_block + l], &lse = read[first_block + layers + l];
        // The output's element count: the last forward's rows times the width.
        const double elements = static_cast<double>(model_.last_tokens()) * width;
        record.blocks.push_back({static_cast<int>(l), output.amax,
                                 elements > 0 ? std::sqrt(output.sum_squares / elements) : 0, lse.amax});
    }
    record.logit_amax = read[first_block + 2 * layers].amax;
    for (size_t l = 0; l <= layers; ++l) {
        ExponentHistogram histogram{l < layers ? static_cast<int>(l) : -1, std::vector<uint64_t>(kExponentBins)};
        for (int bin = 0; bin < kExponentBins; ++bin)
            histogram.counts[static_cast<size_t>(bin)] =
                static_cast<uint64_t>(sums[9 * views.size() + l * kExponentBins + static_cast<size_t>(bin)]);
        record.grad_exponents.push_back(histogram);
    }
    for (size_t l = 0; l < layers; ++l) {
        const auto first = output_counts.begin() + static_cast<std::ptrdiff_t>(l * kExponentBins);
        record.output_exponents.push_back({static_cast<int>(l), std::vector<uint64_t>(first, first + kExponentBins)});
    }
    if (const Fp8Linears* fp8 = model_.fp8()) record.fp8 = fp8->step_tensors();
    if (model_.working_parameters().dtype == DType::f16 && gradient_amax > 0)
        record.loss_scale_headroom_bits = std::log2(kFp16Largest / gradient_amax);
    return record;
}

}  // namespace mixgpt
