#include "kernels/cuda/op_checks.h"

#include <string>

#include "core/error.h"

namespace mixgpt::cuda {
namespace {

std::string dims_text(std::initializer_list<int64_t> dims) {
    std::string text = "(";
    bool first = true;
    for (int64_t d : dims) {
        if (!first) text += ", ";
        text += std::to_string(d);
        first = false;
    }
    return text + ")";
}

bool shape_matches(const TensorView& tensor, std::initializer_list<int64_t> dims) {
    if (tensor.rank != static_cast<int>(dims.size())) return false;
    int axis = 0;
    for (int64_t d : dims)
        if (tensor.dim(axis++) != d) return false;
    return true;
}

[[noreturn]] void fail(const char* op, const char* name, const TensorView& tensor,
                       const std::string& expected) {
    throw Error(std::string("cuda ") + op + ": " + name + " is " + tensor.shape_string() + ", expected " +
                expected);
}

void expect_data(const char* op, const char* name, const TensorView& tensor) {
    if (!tensor.valid()) throw Error(std::string("cuda ") + op + ": " + name + " is missing (null data)");
}

}  // namespace

void expect_tensor(const char* op, const char* name, const TensorView& tensor, DType dtype,
                   std::initializer_list<int64_t> dims) {
    expect_data(op, name, tensor);
    if (tensor.dtype != dtype || !shape_matches(tensor, dims))
        fail(op, name, tensor, dims_text(dims) + " " + dtype_name(dtype));
}

void expect_elements(const char* op, const char* name, const TensorView& tensor, DType dtype, int64_t count) {
    expect_data(op, name, tensor);
    if (tensor.dtype != dtype || tensor.numel() != count)
        fail(op, name, tensor, std::to_string(count) + " elements of " + dtype_name(dtype));
}

int64_t expect_rows(const char* op, const char* name, const TensorView& tensor, DType dtype,
                    int64_t columns) {
    expect_data(op, name, tensor);
    if (columns <= 0 || tensor.rank < 2 || tensor.dim(-1) != columns || tensor.dtype != dtype)
        fail(op, name, tensor, "(..., " + std::to_string(columns) + ") " + dtype_name(dtype));
    return tensor.numel() / columns;
}

int64_t expect_columns(const char* op, const char* name, const TensorView& tensor) {
    expect_data(op, name, tensor);
    if (tensor.rank < 2) fail(op, name, tensor, "a matrix (rank 2 or more)");
    return tensor.dim(-1);
}

void expect_matrix(const char* op, const char* name, const TensorView& tensor, DType dtype, int64_t rows,
                   int64_t columns) {
    if (expect_rows(op, name, tensor, dtype, columns) != rows)
        fail(op, name, tensor, std::to_string(rows) + " rows of " + std::to_string(columns));
}

void expect_indices(const char* op, const char* name, const TensorView& tensor,
                    std::initializer_list<int64_t> dims) {
    expect_data(op, name, tensor);
    if (tensor.dtype != DType::i32 || !shape_matches(tensor, dims))
        fail(op, name, tensor, dims_text(dims) + " " + dtype_name(DType::i32) + " indices");
}

void expect_indices(const char* op, const char* name, const TensorView& tensor, int64_t count) {
    expect_data(op, name, tensor);
    if (tensor.dtype != DType::i32 || tensor.numel() != count)
        fail(op, name, tensor, std::to_string(count) + " " + dtype_name(DType::i32) + " indices");
}

const int32_t* optional_indices(const char* op, const char* name, const TensorView& tensor,
                                std::initializer_list<int64_t> dims) {
    if (!tensor.valid()) return nullptr;
    expect_indices(op, name, tensor, dims);
    return tensor.as<const int32_t>();
}

void expect_rank(const char* op, const char* name, const TensorView& tensor, int rank) {
    expect_data(op, name, tensor);
    if (tensor.rank != rank) fail(op, name, tensor, "rank " + std::to_string(rank));
}

}  // namespace mixgpt::cuda
