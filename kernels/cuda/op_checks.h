// Argument checks of the CUDA ops. Each throws mixgpt::Error with one line naming
// the op, the tensor and what was expected, e.g.
//   "cuda layernorm_forward: weight is (767) bf16, expected (768) bf16".
#pragma once

#include <cstdint>
#include <initializer_list>

#include "core/dtype.h"
#include "core/tensor.h"

namespace mixgpt::cuda {

// The tensor has data, exactly this shape and this dtype.
void expect_tensor(const char* op, const char* name, const TensorView& tensor, DType dtype,
                   std::initializer_list<int64_t> dims);

// The tensor has data, this dtype and `count` elements whatever its shape (flat vectors).
void expect_elements(const char* op, const char* name, const TensorView& tensor, DType dtype, int64_t count);

// A matrix seen as rows of `columns` elements: rank >= 2, last dimension `columns`,
// leading dimensions flattened. Returns the number of rows.
int64_t expect_rows(const char* op, const char* name, const TensorView& tensor, DType dtype, int64_t columns);

// The tensor has data and rank >= 2; returns its last dimension (the columns of expect_rows).
int64_t expect_columns(const char* op, const char* name, const TensorView& tensor);

// As expect_rows, and the rows must number `rows`.
void expect_matrix(const char* op, const char* name, const TensorView& tensor, DType dtype, int64_t rows,
                   int64_t columns);

// Token or target indices: dtype DType::i32 with exactly this shape, or (second form) with
// `count` elements whatever its shape.
void expect_indices(const char* op, const char* name, const TensorView& tensor,
                    std::initializer_list<int64_t> dims);
void expect_indices(const char* op, const char* name, const TensorView& tensor, int64_t count);
// An optional index tensor (the attention ops' document bounds): null when not given, else its
// data, checked as expect_indices does.
const int32_t* optional_indices(const char* op, const char* name, const TensorView& tensor,
                                std::initializer_list<int64_t> dims);

// The tensor has data and this rank (before its dimensions are read to check the others).
void expect_rank(const char* op, const char* name, const TensorView& tensor, int rank);

}  // namespace mixgpt::cuda
