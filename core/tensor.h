// A non-owning view of a tensor: pointer, storage dtype and shape (row-major).
// Ops receive views; the memory belongs to a Buffer elsewhere.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace mixgpt {

struct TensorView {
    static constexpr int kMaxRank = 4;

    void* data = nullptr;
    DType dtype = DType::f32;
    int rank = 0;
    std::array<int64_t, kMaxRank> shape{};

    TensorView() = default;
    TensorView(void* data_, DType dtype_, std::initializer_list<int64_t> dims) : data(data_), dtype(dtype_) {
        MIXGPT_REQUIRE(dims.size() <= kMaxRank, "tensor rank above 4");
        for (int64_t d : dims) shape[static_cast<size_t>(rank++)] = d;
    }

    int64_t dim(int axis) const { return shape[static_cast<size_t>(axis < 0 ? rank + axis : axis)]; }
    int64_t numel() const {
        int64_t n = 1;
        for (int i = 0; i < rank; ++i) n *= shape[static_cast<size_t>(i)];
        return n;
    }
    size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
    template <typename T>
    T* as() const {
        return static_cast<T*>(data);
    }
    bool valid() const { return data != nullptr; }
    std::string shape_string() const;
};

// Elements [begin, end) of a 1-D array (an arena, a shard).
struct ElementRange {
    int64_t begin = 0, end = 0;
    int64_t count() const { return end - begin; }
    bool operator==(const ElementRange& other) const { return begin == other.begin && end == other.end; }
};

// Elements `range` of a 1-D view, as a 1-D view of the same memory.
TensorView slice_elements(const TensorView& values, ElementRange range);

}  // namespace mixgpt
