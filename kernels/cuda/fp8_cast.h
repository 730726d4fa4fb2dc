// FP8 quantization on the device: one pass over a tensor that writes its FP8 codes, optionally
// their transpose (the operand layout the backward products need: cuBLASLt multiplies FP8 only
// with K contiguous in both operands, kernels/cuda/README.md), and records its amax and how many
// elements saturated. Bit for bit what the CPU's cpu::quantize_fp8 (kernels/cpu/fp8_cast.h) does.
// The scale is read from device memory, so a scale updated on the device (fp8_scaling.h) is used
// without the host waiting for it. Needs compute capability 8.9 (fp8_support.h); the conversion
// is `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` where the code is compiled for sm_89 or newer.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.h"
#include "core/fp8.h"

namespace mixgpt::cuda {

struct Fp8QuantizeParams {
    const void* in = nullptr;  // (rows, cols) row-major, fp32, bf16 or fp16
    DType in_dtype = DType::bf16;
    int64_t rows = 0, cols = 0;
    Fp8Format format = Fp8Format::e4m3;
    const float* scale = nullptr;             // device, one float: codes = FP8(fl(in · *scale))
    uint8_t* codes = nullptr;                 // (rows, cols)
    uint8_t* codes_transposed = nullptr;      // (cols, rows), or null for none
    float* amax = nullptr;                    // device, or null: *amax = max(*amax, amax of in)
    unsigned long long* saturated = nullptr;  // device, or null: += elements that saturated
    // The scale inverse the FP8 product of these codes reads, copied from `scale_inverse` (the
    // scaling state's, 4 bytes from its neighbours) to `gemm_scale_inverse`, 16-byte aligned:
    // cuBLASLt refuses FP8 scale pointers that are not (kernels/cuda/README.md). Both or neither.
    const float* scale_inverse = nullptr;  // device, one float
    float* gemm_scale_inverse = nullptr;   // device, one float, 16-byte aligned
};

// Enqueues the quantization on `stream`. amax (NaN ignored, as fmaxf does) and the saturation
// count (|fl(x · scale)| > fp8_max) are the CPU's; they accumulate into what is there (integer
// atomics: exact, so the same whatever order the blocks finish in), so several quantizations in
// a step record their max and total. Throws Error on a bad shape, dtype or missing pointer.
void fp8_quantize(const Fp8QuantizeParams& params, cudaStream_t stream);

// *amax = max(*amax, max |in|) over `count` elements of fp32, bf16 or fp16 (NaN ignored): the
// pass current scaling makes before it computes the scale (fp8_scaling.h).
void fp8_amax(const void* in, DType in_dtype, int64_t count, float* amax, cudaStream_t stream);

}  // namespace mixgpt::cuda
