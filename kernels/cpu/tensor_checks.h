// Shape and dtype checks shared by the CPU ops: a mismatch throws Error naming
// the op, the argument, what it is and what was expected.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "core/tensor.h"

namespace mixgpt::cpu {

// Throws unless `view` is valid, has exactly `shape` and `dtype`.
void require_tensor(const TensorView& view, DType dtype, std::initializer_list<int64_t> shape, const char* op,
                    const char* argument);
// Throws unless `view` is valid, has `rank` dimensions and `dtype` (its shape is checked by the caller).
void require_rank(const TensorView& view, DType dtype, int rank, const char* op, const char* argument);
// Throws Error("cpu <op>: <reason>") unless `condition`.
void require(bool condition, const char* op, const char* reason);

// Index tensors (tokens, targets): throws unless `view` is valid, has exactly `shape` and
// dtype DType::i32 (a float tensor of the same size is refused).
void require_int32(const TensorView& view, std::initializer_list<int64_t> shape, const char* op,
                   const char* argument);

}  // namespace mixgpt::cpu
