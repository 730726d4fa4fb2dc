#include "kernels/cpu/float_io.h"

#include <algorithm>

namespace mixgpt::cpu {
namespace {

constexpr int64_t kConversionChunk = 16384;

}  // namespace

void parallel_to_float(const void* source, DType source_dtype, float* destination, int64_t count) {
    const auto* bytes = static_cast<const char*>(source);
    const size_t element = dtype_size(source_dtype);
#pragma omp parallel for schedule(static)
    for (int64_t begin = 0; begin < count; begin += kConversionChunk) {
        const int64_t n = count - begin < kConversionChunk ? count - begin : kConversionChunk;
        convert_to_float(bytes + static_cast<size_t>(begin) * element, source_dtype, destination + begin,
                         static_cast<size_t>(n));
    }
}

void parallel_from_float(const float* source, void* destination, DType destination_dtype, int64_t count) {
    auto* bytes = static_cast<char*>(destination);
    const size_t element = dtype_size(destination_dtype);
#pragma omp parallel for schedule(static)
    for (int64_t begin = 0; begin < count; begin += kConversionChunk) {
        const int64_t n = count - begin < kConversionChunk ? count - begin : kConversionChunk;
        convert_from_float(source + begin, bytes + static_cast<size_t>(begin) * element, destination_dtype,
                           static_cast<size_t>(n));
    }
}

FloatInput::FloatInput(ScratchPool& scratch, const TensorView& view) : data_(view.as<const float>()) {
    if (view.dtype == DType::f32) return;
    copy_ = scratch.borrow(static_cast<size_t>(view.numel()));
    parallel_to_float(view.data, view.dtype, copy_.data(), view.numel());
    data_ = copy_.data();
}

FloatInput::FloatInput(ScratchPool& scratch, const TensorView& view, int64_t count, float fill)
    : data_(view.as<const float>()) {
    if (view.valid() && view.dtype == DType::f32) return;
    copy_ = scratch.borrow(static_cast<size_t>(count));
    if (view.valid())
        parallel_to_float(view.data, view.dtype, copy_.data(), count);
    else
        std::fill(copy_.data(), copy_.data() + count, fill);
    data_ = copy_.data();
}

FloatOutput::FloatOutput(ScratchPool& scratch, const TensorView& view, bool load_current)
    : view_(view), data_(view.as<float>()) {
    if (view.dtype == DType::f32) return;
    copy_ = scratch.borrow(static_cast<size_t>(view.numel()));
    if (load_current) parallel_to_float(view.data, view.dtype, copy_.data(), view.numel());
    data_ = copy_.data();
}

void FloatOutput::store() {
    if (view_.dtype != DType::f32) parallel_from_float(data_, view_.data, view_.dtype, view_.numel());
}

float round_to_tf32(float value) {
    uint32_t bits = float_bits(value);
    if ((bits & 0x7f800000u) == 0x7f800000u) return value;
    bits += 0xfffu + ((bits >> 13) & 1u);
    return bits_float(bits & ~0x1fffu);
}

}  // namespace mixgpt::cpu
