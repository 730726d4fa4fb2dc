#include "interop/hf_layout.h"

#include <algorithm>

#include "core/error.h"
#include "interop/gpt2_layout.h"
#include "interop/llama_layout.h"

namespace mixgpt::interop {
namespace {

int64_t row_width(const HfTensor& tensor) { return tensor.view->shape.size() == 2 ? tensor.view->shape[1] : 1; }

}  // namespace

std::vector<HfTensor> hf_tensors(const GPTConfig& config, const ParameterLayout& layout) {
    return config.arch == Arch::llama ? llama_tensors(config, layout) : gpt2_tensors(config, layout);
}

std::vector<float> to_hf(const HfTensor& tensor, const float* parameters) {
    if (tensor.view == nullptr) {
        int64_t count = 1;
        for (const int64_t size : tensor.hf_shape) count *= size;
        return std::vector<float>(static_cast<size_t>(count), tensor.constant);
    }
    const int64_t width = row_width(tensor);
    const float* source = parameters + tensor.view->offset + tensor.first_row * width;
    if (!tensor.transposed) return std::vector<float>(source, source + tensor.rows * width);
    const int64_t out = tensor.rows, in = width;
    std::vector<float> values(static_cast<size_t>(out * in));  // (in, out)
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) values[static_cast<size_t>(i * out + o)] = source[o * in + i];
    return values;
}

void from_hf(const HfTensor& tensor, const float* values, float* parameters) {
    MIXGPT_REQUIRE(tensor.view != nullptr, tensor.hf_name + ": no mixgpt tensor holds it");
    const int64_t width = row_width(tensor);
    float* destination = parameters + tensor.view->offset + tensor.first_row * width;
    if (!tensor.transposed) {
        std::copy(values, values + tensor.rows * width, destination);
        return;
    }
    const int64_t out = tensor.rows, in = width;
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) destination[o * in + i] = values[i * out + o];
}

}  // namespace mixgpt::interop
