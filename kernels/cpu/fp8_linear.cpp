// The FP8 products of the linear layers (kernels/ops.def, fp8_matmul_*): each operand quantized
// with its scaling slot (cpu::quantize_fp8), then cpu::fp8_matmul, which is "quantise, multiply in
// FP32, scale" exactly. The scaling state is host memory here; the same updates as
// kernels/cuda/fp8_scaling.h makes on the device.
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/fp8_cast.h"
#include "kernels/cpu/fp8_matmul.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

// One operand's codes, K-contiguous, and its scale inverse.
struct QuantizedOperand {
    std::vector<uint8_t> codes, transposed;
    Fp8Matrix matrix;
};

void check_scaling(const Fp8TensorScaling& s, const char* op) {
    require(s.values != nullptr && s.saturated != nullptr, op, "the FP8 scaling state is missing");
    require(s.tensor >= 0 && s.tensor < s.tensors, op, "the FP8 scaling slot is out of range");
}

// x (rows, cols) quantized with slot s: codes (rows, cols), or (cols, rows) when `transpose`.
QuantizedOperand quantize(const TensorView& x, const Fp8TensorScaling& s, bool transpose, const char* op) {
    check_scaling(s, op);
    const int64_t rows = x.dim(0), cols = x.dim(1);
    QuantizedOperand q;
    q.codes.resize(static_cast<size_t>(rows * cols));
    if (transpose) q.transposed.resize(q.codes.size());
    float& scale = s.values[s.tensor];
    float& scale_inverse = s.values[s.tensors + s.tensor];
    if (s.config.scaling == Fp8Scaling::current) {
        const float amax = quantize_fp8(x, 1.f, s.format, q.codes.data(), nullptr).amax;
        scale = fp8_scale_from_amax(amax, fp8_scaled_max(s.format, s.config.margin), 1.f);
        scale_inverse = 1.f / scale;
    }
    const Fp8QuantizeStats stats =
        quantize_fp8(x, scale, s.format, q.codes.data(), transpose ? q.transposed.data() : nullptr);
    if (s.config.scaling == Fp8Scaling::delayed) {
        float& slot = s.values[2 * s.tensors + s.tensor * s.config.history_length];
        slot = std::fmax(slot, stats.amax);
    }
    s.saturated[s.tensor] += stats.saturated;
    q.matrix.codes = transpose ? q.transposed.data() : q.codes.data();
    q.matrix.rows = transpose ? cols : rows;
    q.matrix.cols = transpose ? rows : cols;
    q.matrix.format = s.format;
    q.matrix.scale_inverse = scale_inverse;
    return q;
}

}  // namespace

void CpuBackend::fp8_matmul_forward(TensorView out, TensorView inp, TensorView weight, TensorView bias,
                                    const Fp8TensorScaling& inp_scaling,
                                    const Fp8TensorScaling& weight_scaling) {
    const char* op = "fp8_matmul_forward";
    require_rank(inp, act(), 2, op, "inp");
    require_rank(weight, act(), 2, op, "weight");
    require_tensor(weight, act(), {weight.dim(0), inp.dim(1)}, op, "weight");
    const QuantizedOperand a = quantize(inp, inp_scaling, false, op);
    const QuantizedOperand b = quantize(weight, weight_scaling, false, op);
    fp8_matmul(out, a.matrix, b.matrix, bias, false);
}

void CpuBackend::fp8_matmul_backward_input(TensorView dinp, TensorView dout, TensorView weight,
                                           const Fp8TensorScaling& dout_scaling,
                                           const Fp8TensorScaling& weight_scaling) {
    const char* op = "fp8_matmul_backward_input";
    require_rank(dout, act(), 2, op, "dout");
    require_rank(weight, act(), 2, op, "weight");
    require_tensor(weight, act(), {dout.dim(1), weight.dim(1)}, op, "weight");
    const QuantizedOperand a = quantize(dout, dout_scaling, false, op);
    const QuantizedOperand b = quantize(weight, weight_scaling, true, op);  // (K, N)
    fp8_matmul(dinp, a.matrix, b.matrix, TensorView(), false);
}

void CpuBackend::fp8_matmul_backward_weight(TensorView dweight, TensorView dbias, TensorView dout,
                                            TensorView inp, const Fp8TensorScaling& dout_scaling,
                                            const Fp8TensorScaling& inp_scaling) {
    const char* op = "fp8_matmul_backward_weight";
    require_rank(dout, act(), 2, op, "dout");
    require_rank(inp, act(), 2, op, "inp");
    require_tensor(inp, act(), {dout.dim(0), inp.dim(1)}, op, "inp");
    const QuantizedOperand a = quantize(dout, dout_scaling, true, op);  // (N, M)
    const QuantizedOperand b = quantize(inp, inp_scaling, true, op);    // (K, M)
    fp8_matmul(dweight, a.matrix, b.matrix, TensorView(), true);
    if (dbias.valid()) add_bias_gradient(dbias, dout, op);
}

void CpuBackend::fp8_update_delayed(const Fp8TensorScaling& state) {
    check_scaling(state, "fp8_update_delayed");
    const size_t size = Fp8ScalingState::flat_size(state.tensors, state.config.history_length);
    Fp8ScalingState host(state.tensors, state.format, state.config);
    host.load_flat(std::vector<float>(state.values, state.values + size));
    host.update_delayed();
    std::copy(host.flat().begin(), host.flat().end(), state.values);
}

}  // namespace mixgpt::cpu
