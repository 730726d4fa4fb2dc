// Model FLOPs for MFU: the arithmetic a training step needs, over what the device could do.
//
// Per trained token: 6 N_mm for the weight matrix products (forward 2 N_mm, backward 4 N_mm) plus
// 6 L T C for attention (scores and weighted values of every query head, forward and backward,
// counting the causal half of the T x T products; the same with grouped-query attention, whose
// query heads each still score every key). N_mm counts the weights each token is multiplied by:
//   N_mm = L (C Q + C C + C M + D C) + V C
// with Q = (H + 2 Hkv) hd the q, k and v projections (GQA's smaller k and v included), M the MLP's
// input width (4C for GPT-2's GELU; 2F for SwiGLU's gate and up) and D its hidden width (4C; F),
// so SwiGLU counts its three matrices, and V C the output head (tied or not). Biases, norms and
// the embedding lookups (no products) are left out, so a family without biases counts the same.
// For GPT-2 d12 (vocabulary 50257) at T 1024 this is 0.7% below 6 N + 6 L T C with N every parameter.
//
// Peak dense throughput in TFLOP/s by device name (the SXM parts' datasheet figures):
//   H100, H200  bf16/fp16 989, tf32 494, fp32 67
//   A100        bf16/fp16 312, tf32 156, fp32 19.5
// Anything else (CPUs included) is unknown: 0, and MFU is reported only with --peak-tflops
// (`bench`, `train`).
#pragma once

#include <string>

#include "kernels/precision.h"
#include "model/config.h"

namespace mixgpt {

// N_mm above.
double matmul_weights_per_token(const GPTConfig& config);
double training_flops_per_token(const GPTConfig& config, int seq_len);

// `device_name` as Backend::name() gives it; 0 when the device is not in the table.
double peak_tflops(const std::string& device_name, Precision precision);

// Model FLOPs utilization: training_flops_per_token x tokens_per_second over the peak of all
// `devices` (peak_tflops per device). NaN when the peak is not positive (unknown).
double model_flops_utilization(const GPTConfig& config, int seq_len, double tokens_per_second,
                               double peak_tflops, int devices = 1);

}  // namespace mixgpt
