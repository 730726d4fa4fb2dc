#include "kernels/cpu/tensor_checks.h"

#include <string>

#include "core/error.h"

namespace mixgpt::cpu {
namespace {

std::string describe_expected(DType dtype, std::initializer_list<int64_t> shape) {
    std::string text = "(";
    bool first = true;
    for (int64_t d : shape) {
        if (!first) text += ", ";
        text += std::to_string(d);
        first = false;
    }
    return text + ") " + dtype_name(dtype);
}

}  // namespace

void require_tensor(const TensorView& view, DType dtype, std::initializer_list<int64_t> shape, const char* op,
                    const char* argument) {
    bool matches = view.valid() && view.dtype == dtype && view.rank == static_cast<int>(shape.size());
    int axis = 0;
    for (int64_t d : shape) matches = matches && view.dim(axis++) == d;
    if (!matches)
        throw Error(std::string("cpu ") + op + ": " + argument + " is " +
                    (view.valid() ? view.shape_string() : std::string("missing")) + ", expected " +
                    describe_expected(dtype, shape));
}

void require_rank(const TensorView& view, DType dtype, int rank, const char* op, const char* argument) {
    if (!view.valid() || view.dtype != dtype || view.rank != rank)
        throw Error(std::string("cpu ") + op + ": " + argument + " is " +
                    (view.valid() ? view.shape_string() : std::string("missing")) + ", expected rank " +
                    std::to_string(rank) + " " + dtype_name(dtype));
}

void require(bool condition, const char* op, const char* reason) {
    if (!condition) throw Error(std::string("cpu ") + op + ": " + reason);
}

void require_int32(const TensorView& view, std::initializer_list<int64_t> shape, const char* op,
                   const char* argument) {
    require_tensor(view, DType::i32, shape, op, argument);
}

}  // namespace mixgpt::cpu
