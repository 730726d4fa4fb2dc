// Model FLOPs for MFU: the arithmetic a training step needs, over what the device could do.
//
// Per trained token: 6N for the weight matmuls (forward 2N, backward 4N; N = real parameters)
// plus 6*L*T*C for attention (scores and weighted values, forward and backward, counting the
// causal half of the T x T products).
//
// Peak dense throughput in TFLOP/s by device name (the SXM parts' datasheet figures):
//   H100, H200  bf16/fp16 989, tf32 494, fp32 67
//   A100        bf16/fp16 312, tf32 156, fp32 19.5
// Anything else (CPUs included) is unknown: 0, and MFU is reported only with --peak-tflops.
#pragma once

#include <string>

#include "kernels/precision.h"
#include "model/config.h"

namespace mixgpt {

double training_flops_per_token(const GPTConfig& config, int seq_len);

// `device_name` as Backend::name() gives it; 0 when the device is not in the table.
double peak_tflops(const std::string& device_name, Precision precision);

}  // namespace mixgpt
