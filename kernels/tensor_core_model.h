// How NVIDIA's tensor cores add products, as a model that reproduces the hardware's fp32 outputs
// bit for bit (what the CUDA simulator computes for mma.sync and cuBLASLt, and what the GPU
// lease's probe compares a real GPU with: bench/tensor_core_probe/).
//
// The model is the block fused multiply-add of Khattak and Mikaitis, "Accurate Models of NVIDIA
// Tensor Cores" (arXiv 2512.07004, 2025), which extends Fasi, Higham, Mikaitis and Pranesh,
// "Numerical behavior of NVIDIA tensor cores" (PeerJ CS 2021). One step of a tensor core takes
// `block` products of two inputs and an accumulator c:
//   1. every product is exact;
//   2. the products and c are aligned to the largest exponent E among them, and each one's
//      magnitude is truncated to the bits down to 2^(E - 23 - extra_alignment_bits) (no rounding,
//      no sticky bit); when the largest product's significand, taken as the product of its
//      inputs' significands, is 2 or more and it is not smaller than c, one more bit is kept (its
//      exponent counts from the inputs' exponents, not from the normalised product);
//   3. the aligned terms are added exactly and the sum is normalised once, to `result_bits`
//      fraction bits, rounded toward zero (nearest-even for fp16 outputs, not modelled here).
// A dot product longer than one step is a chain of steps, each taking the previous one's result
// as its c, in ascending k. Inputs and products that are NaN or infinite give the IEEE result.
//
// The parameter values are the authors' published models (their MATLAB toolbox, which the paper
// checked bit for bit against each GPU on 10^5 random vectors):
//   A100 (sm_80): bf16/fp16 8 products a step, 1 extra bit; tf32 4 products, 1 extra bit.
//   H100 (sm_90): bf16/fp16 16 products a step, 2 extra bits; tf32 8 products, 2 extra bits;
//                 e4m3/e5m2 32 products a step kept in 13 fraction bits (an e8m13 accumulator,
//                 which public FP8 measurements report too).
// Two details rest on other sources and wait for the lease's probe to settle them: cuBLASLt's
// FP8 products add the narrow accumulator into an fp32 one every `promotion_interval` k elements
// (128, the interval DeepSeek-V3's report gives for Hopper's FP8 GEMMs; cuBLASLt documents
// periodic promotion without its interval), and TF32 inputs are fp32 values truncated to 10
// fraction bits (the toolbox's TF32 input rounding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mixgpt {

enum class TensorCoreInput { bf16, fp16, tf32, e4m3, e5m2 };

struct TensorCoreModel {
    std::string name;                // "h100 bf16"
    bool exact = false;              // every step summed exactly and rounded once to fp32, to nearest
    int block = 16;                  // products one step adds
    int extra_alignment_bits = 2;    // bits kept below the fp32 significand of the largest term
    bool carry_bit = true;           // step 2's extra bit for a leading product of significand >= 2
    int result_bits = 23;            // fraction bits of a step's result
    int promotion_interval = 0;      // k elements between additions into an fp32 accumulator; 0: none
    int input_min_exponent = -126;   // the input format's smallest normal exponent
};

// The model of the tensor cores of a device of compute capability `sm` (80 or 90) for `input`;
// sm_80 has no FP8 (refused by an exception).
TensorCoreModel tensor_core_model(int sm, TensorCoreInput input);
// Every step exact, rounded once to fp32 to nearest: more exact than any GPU, for tests that want
// exactness (and the simulator's arithmetic before this model).
TensorCoreModel exact_tensor_core_model(TensorCoreInput input);

// An input as a step reads it: an exact value of the model's input format and the exponent the
// hardware aligns its products by (its leading bit's, at least the format's smallest normal
// exponent; far below any real one for zero). Every input enters many products, so callers that
// multiply matrices make these once per element (tensor_core_input) rather than once per product.
struct TensorCoreOperand {
    double value;
    int exponent;
};
TensorCoreOperand tensor_core_input(const TensorCoreModel& model, double value);

// One step: c + sum of a[i] * b[i * b_stride] for i < n (n <= model.block).
float tensor_core_step(const TensorCoreModel& model, const TensorCoreOperand* a, const TensorCoreOperand* b,
                       size_t b_stride, int n, float c);

// A dot product of length k: steps of model.block products in ascending k from c, with the
// model's promotions into an fp32 accumulator (then c is added to the first promoted sum).
float tensor_core_dot(const TensorCoreModel& model, const TensorCoreOperand* a, const TensorCoreOperand* b,
                      size_t b_stride, uint64_t k, float c);
// The same from plain values, each made an operand on the way (for callers off the hot path).
float tensor_core_dot(const TensorCoreModel& model, const double* a, const double* b, size_t b_stride, uint64_t k,
                      float c);

// TF32's input: an fp32 value with its 13 lowest fraction bits dropped (toward zero).
float truncate_to_tf32(float value);

}  // namespace mixgpt
