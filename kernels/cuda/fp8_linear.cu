// The FP8 products of the linear layers (kernels/ops.def, fp8_matmul_*) on the device: each
// operand quantized in one pass (fp8_cast.h: codes, their transpose where the product needs K
// contiguous, amax and saturation count), current scaling's amax and scale computed on the device
// first (fp8_scaling.h), then cuBLASLt's FP8 product (run_fp8_gemm) reading the scale inverses
// from device memory. Nothing waits on the host. The CPU's kernels/cpu/fp8_linear.cpp is the oracle.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/fp8_cast.h"
#include "kernels/cuda/fp8_scaling.h"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

Fp8ScalingDevice device_state(const Fp8TensorScaling& s, const char* op) {
    MIXGPT_REQUIRE(s.values != nullptr && s.saturated != nullptr,
                   std::string(op) + ": the FP8 scaling state is missing");
    MIXGPT_REQUIRE(s.tensor >= 0 && s.tensor < s.tensors,
                   std::string(op) + ": the FP8 scaling slot is out of range");
    Fp8ScalingDevice state;
    state.values = s.values;
    state.saturated = reinterpret_cast<unsigned long long*>(s.saturated);
    state.tensors = s.tensors;
    state.format = s.format;
    state.config = s.config;
    return state;
}

size_t round_up_16(size_t bytes) { return (bytes + 15) / 16 * 16; }

// One operand of an FP8 product, in scratch: its codes K-contiguous and its scale inverse in a
// 16-byte aligned slot after them (fp8_quantize copies it there; cuBLASLt refuses the state's own,
// which sit 4 bytes apart).
struct QuantizedOperand {
    const uint8_t* codes;
    const float* scale_inverse;
};

// x (rows, cols) quantized with slot s into scratch: the codes (rows, cols), or (cols, rows) when
// `transpose`.
QuantizedOperand quantize(const TensorView& x, const Fp8TensorScaling& s, bool transpose, ScratchSpace& scratch,
                          ScratchSlot slot, cudaStream_t stream, const char* op) {
    const Fp8ScalingDevice state = device_state(s, op);
    const int64_t rows = x.dim(0), cols = x.dim(1);
    const size_t codes_bytes = round_up_16(static_cast<size_t>(rows * cols));
    const size_t layouts = transpose ? 2 : 1;
    auto* region = static_cast<uint8_t*>(scratch.get(slot, codes_bytes * layouts + 16));
    if (s.config.scaling == Fp8Scaling::current) {
        fp8_amax(x.data, x.dtype, rows * cols, state.amax_slot(s.tensor), stream);
        fp8_update_current(state, s.tensor, stream);
    }
    Fp8QuantizeParams params;
    params.in = x.data;
    params.in_dtype = x.dtype;
    params.rows = rows;
    params.cols = cols;
    params.format = s.format;
    params.scale = state.scale(s.tensor);
    params.codes = region;
    params.codes_transposed = transpose ? region + codes_bytes : nullptr;
    params.amax = s.config.scaling == Fp8Scaling::delayed ? state.amax_slot(s.tensor) : nullptr;
    params.saturated = state.saturated + s.tensor;
    params.scale_inverse = state.scale_inverse(s.tensor);
    params.gemm_scale_inverse = reinterpret_cast<float*>(region + codes_bytes * layouts);
    fp8_quantize(params, stream);
    return {transpose ? params.codes_transposed : params.codes, params.gemm_scale_inverse};
}

}  // namespace

void CudaBackend::fp8_matmul_forward(TensorView out, TensorView inp, TensorView weight, TensorView bias,
                                     const Fp8TensorScaling& inp_scaling,
                                     const Fp8TensorScaling& weight_scaling) {
    const char* op = "fp8_matmul_forward";
    const DType act = activation_dtype(precision_);
    expect_rank(op, "inp", inp, 2);
    const int64_t M = inp.dim(0), K = inp.dim(1);
    expect_rank(op, "weight", weight, 2);
    const int64_t N = weight.dim(0);
    expect_tensor(op, "weight", weight, act, {N, K});
    expect_tensor(op, "inp", inp, act, {M, K});
    expect_tensor(op, "out", out, act, {M, N});
    if (bias.valid()) expect_tensor(op, "bias", bias, act, {N});
    Fp8Gemm gemm;
    const QuantizedOperand a = quantize(inp, inp_scaling, false, *scratch_, ScratchSlot::fp8_operand_a, stream_, op);
    const QuantizedOperand b =
        quantize(weight, weight_scaling, false, *scratch_, ScratchSlot::fp8_operand_b, stream_, op);
    gemm.a = a.codes;
    gemm.a_format = inp_scaling.format;
    gemm.a_scale_inverse = a.scale_inverse;
    gemm.b = b.codes;
    gemm.b_format = weight_scaling.format;
    gemm.b_scale_inverse = b.scale_inverse;
    gemm.out = out.data;
    gemm.out_dtype = act;
    gemm.bias = bias.valid() ? bias.data : nullptr;
    if (bias.valid() && !is_aligned(bias.data, 16)) {
        void* aligned = scratch_->get(ScratchSlot::matmul_bias, bias.bytes());
        CUDA_CHECK(cudaMemcpyAsync(aligned, bias.data, bias.bytes(), cudaMemcpyDeviceToDevice, stream_));
        gemm.bias = aligned;
    }
    gemm.M = M;
    gemm.N = N;
    gemm.K = K;
    run_fp8_gemm(*matmuls_, gemm);
}

void CudaBackend::fp8_matmul_backward_input(TensorView dinp, TensorView dout, TensorView weight,
                                            const Fp8TensorScaling& dout_scaling,
                                            const Fp8TensorScaling& weight_scaling) {
    const char* op = "fp8_matmul_backward_input";
    const DType act = activation_dtype(precision_);
    expect_rank(op, "dout", dout, 2);
    expect_rank(op, "weight", weight, 2);
    const int64_t M = dout.dim(0), N = dout.dim(1), K = weight.dim(1);
    expect_tensor(op, "dout", dout, act, {M, N});
    expect_tensor(op, "weight", weight, act, {N, K});
    expect_tensor(op, "dinp", dinp, act, {M, K});
    Fp8Gemm gemm;
    const QuantizedOperand a = quantize(dout, dout_scaling, false, *scratch_, ScratchSlot::fp8_operand_a, stream_, op);
    const QuantizedOperand b =
        quantize(weight, weight_scaling, true, *scratch_, ScratchSlot::fp8_operand_b, stream_, op);  // (K,N)
    gemm.a = a.codes;
    gemm.a_format = dout_scaling.format;
    gemm.a_scale_inverse = a.scale_inverse;
    gemm.b = b.codes;
    gemm.b_format = weight_scaling.format;
    gemm.b_scale_inverse = b.scale_inverse;
    gemm.out = dinp.data;
    gemm.out_dtype = act;
    gemm.M = M;
    gemm.N = K;
    gemm.K = N;
    run_fp8_gemm(*matmuls_, gemm);
}

void CudaBackend::fp8_matmul_backward_weight(TensorView dweight, TensorView dbias, TensorView dout,
                                             TensorView inp, const Fp8TensorScaling& dout_scaling,
                                             const Fp8TensorScaling& inp_scaling) {
    const char* op = "fp8_matmul_backward_weight";
    const DType act = activation_dtype(precision_);
    expect_rank(op, "dout", dout, 2);
    expect_rank(op, "inp", inp, 2);
    const int64_t M = dout.dim(0), N = dout.dim(1), K = inp.dim(1);
    expect_tensor(op, "inp", inp, act, {M, K});
    expect_tensor(op, "dweight", dweight, DType::f32, {N, K});
    if (dbias.valid()) expect_tensor(op, "dbias", dbias, DType::f32, {N});
    Fp8Gemm gemm;
    const QuantizedOperand a =
        quantize(dout, dout_scaling, true, *scratch_, ScratchSlot::fp8_operand_a, stream_, op);  // (N,M)
    const QuantizedOperand b =
        quantize(inp, inp_scaling, true, *scratch_, ScratchSlot::fp8_operand_b, stream_, op);  // (K,M)
    gemm.a = a.codes;
    gemm.a_format = dout_scaling.format;
    gemm.a_scale_inverse = a.scale_inverse;
    gemm.b = b.codes;
    gemm.b_format = inp_scaling.format;
    gemm.b_scale_inverse = b.scale_inverse;
    gemm.out = dweight.data;
    gemm.out_dtype = DType::f32;
    gemm.M = N;
    gemm.N = K;
    gemm.K = M;
    gemm.accumulate = true;
    run_fp8_gemm(*matmuls_, gemm);
    if (dbias.valid()) add_bias_gradient(dbias, dout);
}

void CudaBackend::fp8_update_delayed(const Fp8TensorScaling& state) {
    Fp8ScalingDevice device = device_state(state, "fp8_update_delayed");
    cuda::fp8_update_delayed(device, stream_);
}

}  // namespace mixgpt::cuda
