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

TensorView slice_elements(const TensorView& values, ElementRange range) {
    MIXGPT_REQUIRE(values.rank == 1, "slice_elements: expects a 1-D view, got " + values.shape_string());
    MIXGPT_REQUIRE(range.begin >= 0 && range.begin <= range.end && range.end <= values.numel(),
                   "slice_elements: range outside the view");
    char* first =
        static_cast<char*>(values.data) + static_cast<size_t>(range.begin) * dtype_size(values.dtype);
    return TensorView(first, values.dtype, {range.count()});
}

}  // namespace mixgpt
