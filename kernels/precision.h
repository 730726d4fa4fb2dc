// The run's precision and what it implies for storage.
//
//   precision  working weights / activations   matmul math
//   fp32       fp32                            fp32
//   tf32       fp32                            tf32 inputs, fp32 accumulate
//   bf16       bf16                            bf16 inputs, fp32 accumulate
//   fp16       fp16                            fp16 inputs, fp32 accumulate
//   fp8        bf16                            the linear layers' products: FP8 inputs (per-tensor
//                                              scaling, the fp8_matmul_* ops of kernels/ops.def),
//                                              fp32 accumulate, bf16 out; the others as bf16
//
// Master weights, optimizer moments and parameter gradients are fp32 always.
#pragma once

#include <string>

#include "core/dtype.h"

namespace mixgpt {

enum class Precision { fp32, tf32, bf16, fp16, fp8 };

Precision parse_precision(const std::string& name);  // throws Error on an unknown name
const char* precision_name(Precision precision);
DType activation_dtype(Precision precision);

}  // namespace mixgpt
