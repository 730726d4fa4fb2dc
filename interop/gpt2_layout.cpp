#include "interop/gpt2_layout.h"

#include <algorithm>

namespace mixgpt::interop {
namespace {

bool is_conv1d_weight(const ParameterView& view) {
    return view.shape.size() == 2 && view.name != "wte" && view.name != "wpe";
}

}  // namespace

std::vector<Gpt2Tensor> gpt2_tensors(const GPTConfig& config, const ParameterLayout& layout) {
    std::vector<Gpt2Tensor> tensors;
    for (const ParameterView& view : layout.views()) {
        Gpt2Tensor tensor;
        tensor.view = &view;
        tensor.rows = view.name == "wte" ? config.vocab_size : view.shape[0];
        const bool embedding = view.name == "wte" || view.name == "wpe";
        tensor.hf_name = "transformer." + view.name + (embedding ? ".weight" : "");
        tensor.transposed = is_conv1d_weight(view);
        if (tensor.transposed) {
            tensor.hf_shape = {view.shape[1], view.shape[0]};
        } else if (view.shape.size() == 2) {
            tensor.hf_shape = {tensor.rows, view.shape[1]};
        } else {
            tensor.hf_shape = view.shape;
        }
        tensors.push_back(tensor);
    }
    return tensors;
}

std::vector<float> to_gpt2(const Gpt2Tensor& tensor, const float* parameters) {
    const float* source = parameters + tensor.view->offset;
    if (!tensor.transposed) {
        const int64_t count =
            tensor.view->shape.size() == 2 ? tensor.rows * tensor.view->shape[1] : tensor.view->numel;
        return std::vector<float>(source, source + count);
    }
    const int64_t out = tensor.view->shape[0], in = tensor.view->shape[1];
    std::vector<float> values(static_cast<size_t>(out * in));  // (in, out)
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) values[static_cast<size_t>(i * out + o)] = source[o * in + i];
    return values;
}

void from_gpt2(const Gpt2Tensor& tensor, const float* values, float* parameters) {
    float* destination = parameters + tensor.view->offset;
    if (!tensor.transposed) {
        const int64_t count =
            tensor.view->shape.size() == 2 ? tensor.rows * tensor.view->shape[1] : tensor.view->numel;
        std::copy(values, values + count, destination);
        return;
    }
    const int64_t out = tensor.view->shape[0], in = tensor.view->shape[1];
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) destination[o * in + i] = values[i * out + o];
}

}  // namespace mixgpt::interop
