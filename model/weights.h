// Typed views of every tensor of an arena laid out by ParameterLayout, by role (model/family.h):
// the working weights (act dtype) and the gradients (fp32) are both seen this way. A role the
// family does not have (a bias of a family without biases, the output head when it is tied) is an
// invalid TensorView, which the ops read as "none".
#pragma once

#include <array>
#include <vector>

#include "core/tensor.h"
#include "model/parameters.h"

namespace mixgpt {

class ModelTensors {
public:
    ModelTensors() = default;
    // Views into `arena` (elements of `dtype`, laid out by `layout`).
    ModelTensors(const ParameterLayout& layout, int n_layer, void* arena, DType dtype);

    const TensorView& operator[](Role role) const;  // a model-level role
    const TensorView& block(int layer, Role role) const;
    // The matrix the logits are computed with: output_head, or token_embedding when tied.
    const TensorView& head() const;

private:
    using RoleViews = std::array<TensorView, kRoleCount>;
    RoleViews model_;
    std::vector<RoleViews> blocks_;
};

}  // namespace mixgpt
