#include "train/muon_step.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "core/error.h"

namespace mixgpt {
namespace {

TensorView matrix_view(const TensorView& arena, const MuonMatrix& matrix) {  // (rows, cols)
    const TensorView slice =
        slice_elements(arena, {matrix.offset, matrix.offset + matrix.rows * matrix.cols});
    return TensorView(slice.data, slice.dtype, {matrix.rows, matrix.cols});
}

}  // namespace

size_t muon_iterate_bytes(const GPTConfig& config, DType ns_dtype, int owners) {
    MIXGPT_REQUIRE(owners >= 1, "muon_iterate_bytes: owners must be at least 1");
    std::map<std::pair<int64_t, int64_t>, int64_t> matrices_per_shape;  // (rows, cols) -> count
    for (const MuonMatrix& matrix : muon_parameter_groups(config, ParameterLayout(config)).muon)
        ++matrices_per_shape[{matrix.rows, matrix.cols}];
    size_t elements = 0;
    for (const auto& [shape, count] : matrices_per_shape)  // rank 0 keeps the first of every W
        elements += static_cast<size_t>((count + owners - 1) / owners * shape.first * shape.second);
    return elements * dtype_size(ns_dtype);
}

float muon_scale(int64_t rows, int64_t cols) {
    return static_cast<float>(
        std::sqrt(std::max(1.0, static_cast<double>(rows) / static_cast<double>(cols))));
}

MuonStep::MuonStep(Backend& backend, std::vector<MuonMatrix> matrices, DType ns_dtype)
    : backend_(backend), matrices_(std::move(matrices)), ns_dtype_(ns_dtype) {
    MIXGPT_REQUIRE(ns_dtype == DType::f32 || ns_dtype == DType::bf16,
                   "muon-ns-precision: must be bf16 or fp32");
    for (size_t k = 0; k < matrices_.size(); ++k) {
        const MuonMatrix& matrix = matrices_[k];
        ShapeBatch* batch = nullptr;
        for (ShapeBatch& existing : batches_)
            if (existing.rows == matrix.rows && existing.cols == matrix.cols) batch = &existing;
        if (batch == nullptr) {
            batches_.push_back({matrix.rows, matrix.cols, {}, Buffer()});
            batch = &batches_.back();
        }
        batch->members.push_back(k);
    }
    for (ShapeBatch& batch : batches_)
        batch.iterate = backend_.allocate(
            batch.members.size() * static_cast<size_t>(batch.rows * batch.cols) * dtype_size(ns_dtype_));
}

void MuonStep::step(const TensorView& masters, const TensorView& gradients, const TensorView& momentum,
                    const TensorView& working, const MuonHyper& hyper, StepStatus* status) {
    MIXGPT_REQUIRE(hyper.ns_dtype == ns_dtype_, "muon: the Newton-Schulz precision changed after set-up");
    for (ShapeBatch& batch : batches_) {
        const auto count = static_cast<int64_t>(batch.members.size());
        const TensorView iterate(batch.iterate.data(), ns_dtype_, {count, batch.rows, batch.cols});
        const int64_t slot_elements = batch.rows * batch.cols;
        const auto slot = [&](size_t index) {  // (rows, cols) of the batch
            return TensorView(static_cast<char*>(batch.iterate.data()) +
                                  index * static_cast<size_t>(slot_elements) * dtype_size(ns_dtype_),
                              ns_dtype_, {batch.rows, batch.cols});
        };
        for (size_t index = 0; index < batch.members.size(); ++index) {
            const MuonMatrix& matrix = matrices_[batch.members[index]];
            backend_.muon_momentum(slot(index), matrix_view(momentum, matrix), matrix_view(gradients, matrix),
                                   hyper.momentum, hyper.nesterov, status);
        }
        backend_.muon_newton_schulz(iterate, hyper.ns_steps, status);
        for (size_t index = 0; index < batch.members.size(); ++index) {
            const MuonMatrix& matrix = matrices_[batch.members[index]];
            backend_.muon_update(
                matrix_view(masters, matrix), working.valid() ? matrix_view(working, matrix) : TensorView(),
                slot(index), hyper.learning_rate, muon_scale(matrix.rows, matrix.cols), hyper.weight_decay,
                hyper.stochastic_rounding,
                hyper.seed ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(matrix.offset + 1)), status);
        }
    }
}

}  // namespace mixgpt
