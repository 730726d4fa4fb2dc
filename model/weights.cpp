#include "model/weights.h"

namespace mixgpt {

ModelTensors::ModelTensors(const ParameterLayout& layout, int n_layer, void* arena, DType dtype)
    : blocks_(static_cast<size_t>(n_layer)) {
    for (const ParameterView& parameter : layout.views()) {
        void* data = static_cast<char*>(arena) + static_cast<size_t>(parameter.offset) * dtype_size(dtype);
        const TensorView view = parameter.shape.size() == 1
                                    ? TensorView(data, dtype, {parameter.shape[0]})
                                    : TensorView(data, dtype, {parameter.shape[0], parameter.shape[1]});
        RoleViews& views = parameter.layer < 0 ? model_ : blocks_[static_cast<size_t>(parameter.layer)];
        views[static_cast<size_t>(parameter.role)] = view;
    }
}

const TensorView& ModelTensors::operator[](Role role) const { return model_[static_cast<size_t>(role)]; }

const TensorView& ModelTensors::block(int layer, Role role) const {
    return blocks_[static_cast<size_t>(layer)][static_cast<size_t>(role)];
}

const TensorView& ModelTensors::head() const {
    const TensorView& head = (*this)[Role::output_head];
    return head.valid() ? head : (*this)[Role::token_embedding];
}

}  // namespace mixgpt
