#include "core/tensor.h"

namespace mixgpt {

std::string TensorView::shape_string() const {
    std::string text = "(";
    for (int i = 0; i < rank; ++i) {
        if (i > 0) text += ", ";
        text += std::to_string(shape[static_cast<size_t>(i)]);
    }
    return text + ") " + dtype_name(dtype);
}

}  // namespace mixgpt
