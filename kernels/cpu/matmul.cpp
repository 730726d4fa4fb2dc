// Matrix products through OpenBLAS sgemm in fixed tiles (tiled_gemm.h), with bias and GELU epilogue.
// Under Precision::tf32 both operands are rounded to TF32 first, so TF32's error
// is reproduced; bf16/fp16 operands are exact in float and products accumulate in float.
#include <algorithm>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/tensor_checks.h"
#include "kernels/cpu/tiled_gemm.h"
#include "kernels/cpu/vector_math.h"

namespace mixgpt::cpu {
namespace {

constexpr int64_t kColumnBlock = 16;  // columns one thread owns in the bias-gradient sums

// A matmul operand as floats, rounded to TF32 when the run's precision is tf32.
class Operand {
public:
    Operand(ScratchPool& scratch, const TensorView& view, Precision precision)
        : values_(scratch, view), data_(values_.data()) {
        if (precision != Precision::tf32) return;
        const int64_t n = view.numel();
        rounded_ = scratch.borrow(static_cast<size_t>(n));
        float* rounded = rounded_.data();
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i) rounded[i] = round_to_tf32(values_.data()[i]);
        data_ = rounded;
    }
    const float* data() const { return data_; }

private:
    FloatInput values_;
    ScratchLease rounded_;
    const float* data_;
};

// out += bias, then, with a pre-activation: pre = round(out) to the storage dtype, out = gelu(pre),
// so that gelu_forward(pre_gelu) recomputes out exactly. Row-major (M, N) arrays.
class BiasGeluEpilogue : public TileEpilogue {
public:
    BiasGeluEpilogue(float* out, float* pre, const float* bias, int64_t N, DType dtype)
        : out_(out), pre_(pre), bias_(bias), N_(N), dtype_(dtype) {}

    void apply(int64_t row, int64_t rows, int64_t column, int64_t columns) const override {
        for (int64_t m = row; m < row + rows; ++m) {
            float* out = out_ + m * N_ + column;  // (columns)
            if (bias_ != nullptr)
                for (int64_t n = 0; n < columns; ++n) out[n] += bias_[column + n];
            if (pre_ == nullptr) continue;
            float* pre = pre_ + m * N_ + column;
            std::copy(out, out + columns, pre);
            round_to_dtype(pre, static_cast<size_t>(columns), dtype_);
            gelu_array(pre, out, columns);
        }
    }

private:
    float* out_;
    float* pre_;
    const float* bias_;
    int64_t N_;
    DType dtype_;
};

}  // namespace

void CpuBackend::matmul_forward(TensorView out, TensorView pre_gelu, TensorView inp, TensorView weight,
                                TensorView bias, MatmulEpilogue epilogue) {
    const char* op = "matmul_forward";
    require_rank(inp, act(), 2, op, "inp");
    require_rank(weight, act(), 2, op, "weight");
    const int64_t M = inp.dim(0), K = inp.dim(1), N = weight.dim(0);
    require_tensor(weight, act(), {N, K}, op, "weight");
    require_tensor(out, act(), {M, N}, op, "out");
    const bool with_bias = epilogue != MatmulEpilogue::none,
               with_gelu = epilogue == MatmulEpilogue::bias_gelu;
    require(bias.valid() == with_bias, op,
            with_bias ? "the epilogue adds a bias, and bias is missing"
                      : "bias is given, but the epilogue adds none");
    require(pre_gelu.valid() == with_gelu, op,
            with_gelu ? "the GELU epilogue stores pre_gelu, and pre_gelu is missing"
                      : "pre_gelu is given, but the epilogue has no GELU");
    if (with_gelu) require_tensor(pre_gelu, act(), {M, N}, op, "pre_gelu");
    if (with_bias) require_tensor(bias, act(), {N}, op, "bias");

    const Operand a(scratch_, inp, precision_), w(scratch_, weight, precision_);
    FloatOutput y(scratch_, out, false);
    const FloatInput b(scratch_, with_bias ? bias : TensorView());
    FloatOutput pre(scratch_, pre_gelu, false);
    const BiasGeluEpilogue tile_epilogue(y.data(), with_gelu ? pre.data() : nullptr,
                                         with_bias ? b.data() : nullptr, N, act());
    tiled_sgemm(false, true, M, N, K, a.data(), K, w.data(), K, 0.f, y.data(), N,
                with_bias ? &tile_epilogue : nullptr);
    if (with_gelu) pre.store();
    y.store();
}

void CpuBackend::matmul_backward_input(TensorView dinp, TensorView dout, TensorView weight, bool accumulate) {
    const char* op = "matmul_backward_input";
    require_rank(dout, act(), 2, op, "dout");
    require_rank(weight, act(), 2, op, "weight");
    const int64_t M = dout.dim(0), N = dout.dim(1), K = weight.dim(1);
    require_tensor(weight, act(), {N, K}, op, "weight");
    require_tensor(dinp, act(), {M, K}, op, "dinp");
    const Operand dy(scratch_, dout, precision_), w(scratch_, weight, precision_);
    FloatOutput dx(scratch_, dinp, accumulate);
    tiled_sgemm(false, false, M, K, N, dy.data(), N, w.data(), K, accumulate ? 1.f : 0.f, dx.data(), K);
    dx.store();
}

void CpuBackend::matmul_backward_weight(TensorView dweight, TensorView dbias, TensorView dout,
                                        TensorView inp) {
    const char* op = "matmul_backward_weight";
    require_rank(dout, act(), 2, op, "dout");
    require_rank(inp, act(), 2, op, "inp");
    const int64_t M = dout.dim(0), N = dout.dim(1), K = inp.dim(1);
    require_tensor(inp, act(), {M, K}, op, "inp");
    require_tensor(dweight, DType::f32, {N, K}, op, "dweight");
    if (dbias.valid()) require_tensor(dbias, DType::f32, {N}, op, "dbias");
    const Operand dy(scratch_, dout, precision_), x(scratch_, inp, precision_);
    tiled_sgemm(true, false, N, K, M, dy.data(), N, x.data(), K, 1.f, dweight.as<float>(), K);
    if (dbias.valid()) add_bias_gradient(dbias, dout, op);
}

void CpuBackend::add_bias_gradient(TensorView dbias, TensorView dout, const char* op) {
    const int64_t M = dout.dim(0), N = dout.dim(1);
    require_tensor(dbias, DType::f32, {N}, op, "dbias");
    // Column sums of dout in float (not TF32-rounded): each thread owns whole column blocks.
    const FloatInput g(scratch_, dout);
    float* db = dbias.as<float>();
#pragma omp parallel for schedule(static)
    for (int64_t begin = 0; begin < N; begin += kColumnBlock) {
        const int64_t width = begin + kColumnBlock < N ? kColumnBlock : N - begin;
        float sums[kColumnBlock] = {};
        for (int64_t m = 0; m < M; ++m)
            for (int64_t j = 0; j < width; ++j) sums[j] += g.data()[m * N + begin + j];
        for (int64_t j = 0; j < width; ++j) db[begin + j] += sums[j];
    }
}

}  // namespace mixgpt::cpu
