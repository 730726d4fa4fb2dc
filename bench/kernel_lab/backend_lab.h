// The memory-bound hot kernels of the CUDA backend, through the Backend interface: LayerNorm
// and RMSNorm forward (plain and with the fused residual) and backward, SwiGLU forward and
// backward, the fused classifier, the gradient norm and fused AdamW. Each is validated at a small
// size against the CPU backend, then timed at GPT-2 124M sizes (B·T = 16K tokens, C = 768, a
// SwiGLU hidden width of 2048 = 8C/3, vocabulary 50257 padded to 50304, 124M parameters; a smoke
// run times the small size) and reported in GB/s: each input read once and each output written
// once (an accumulated output counts as both), against the device-to-device copy.
//
// The backend's stream is its own, so these are timed in host-clocked batches
// (lab_timing.h: time_batched), not with CUDA events.
#pragma once

#include <vector>

#include "bench/kernel_lab/lab_context.h"
#include "bench/kernel_lab/lab_report.h"

namespace mixgpt::lab {

std::vector<Row> backend_rows(const LabContext& context);

}  // namespace mixgpt::lab
