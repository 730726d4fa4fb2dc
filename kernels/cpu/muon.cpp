// Muon's three ops (kernels/ops.def): momentum with the Frobenius norm, the quintic Newton-Schulz
// iteration through tiled sgemm (bf16 emulated by rounding each stored result to bf16: the
// products of bf16 values are exact in float and sum in float, as on tensor cores with fp32
// accumulation), and the update of the fp32 masters with the working copy.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/stochastic_rounding.h"
#include "kernels/cpu/tensor_checks.h"
#include "kernels/cpu/tiled_gemm.h"

namespace mixgpt::cpu {
namespace {

constexpr int64_t kChunk = 16384;  // elements of one work item (fixed: the norm's sum order)
constexpr int64_t kNormLanes = 8;  // running sums within one chunk of the norm
constexpr float kNormEpsilon = 1e-7f;
constexpr float kA = 3.4445f, kB = -4.7750f, kC = 2.0315f;

void require_muon_x(const TensorView& x, const char* op) {
    require(x.valid() && (x.dtype == DType::f32 || x.dtype == DType::bf16), op, "x must be f32 or bf16");
}

// values (count) = fl(first * a[i] + second * b[i]) rounded to dtype; a may alias values.
void combine(float* values, const float* a, float first, const float* b, float second, int64_t count,
             DType dtype) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i) values[i] = first * a[i] + second * b[i];
    if (dtype != DType::f32) round_to_dtype(values, static_cast<size_t>(count), dtype);
}

// `steps` iterations on one matrix x (rows, cols) in float holding dtype's values. gram and poly
// hold (s, s), product (rows, cols), with s = min(rows, cols).
void newton_schulz_matrix(float* x, int64_t rows, int64_t cols, int steps, DType dtype, float* gram,
                          float* poly, float* product) {
    const bool tall = rows > cols;
    const int64_t s = tall ? cols : rows;
    for (int step = 0; step < steps; ++step) {
        if (tall)  // A (c, c) = X^T X
            tiled_sgemm(true, false, s, s, rows, x, cols, x, cols, 0.f, gram, s);
        else  // A (r, r) = X X^T
            tiled_sgemm(false, true, s, s, cols, x, cols, x, cols, 0.f, gram, s);
        if (dtype != DType::f32) round_to_dtype(gram, static_cast<size_t>(s * s), dtype);
        tiled_sgemm(false, false, s, s, s, gram, s, gram, s, 0.f, poly, s);  // A A
        combine(poly, gram, kB, poly, kC, s * s, dtype);                     // B = b A + c A A
        if (tall)                                                            // X B (r, c)
            tiled_sgemm(false, false, rows, cols, cols, x, cols, poly, cols, 0.f, product, cols);
        else  // B X (r, c)
            tiled_sgemm(false, false, rows, cols, rows, poly, rows, x, cols, 0.f, product, cols);
        combine(x, x, kA, product, 1.f, rows * cols, dtype);  // X = a X + (B X | X B)
    }
}

}  // namespace

void CpuBackend::muon_momentum(TensorView x, TensorView momentum, TensorView grads, float mu, bool nesterov,
                               const StepStatus* status) {
    const char* op = "muon_momentum";
    require(status != nullptr, op, "status is null");
    require_rank(grads, DType::f32, 2, op, "grads");
    const int64_t rows = grads.dim(0), cols = grads.dim(1), n = rows * cols;
    require_tensor(momentum, DType::f32, {rows, cols}, op, "momentum");
    require_muon_x(x, op);
    require_tensor(x, x.dtype, {rows, cols}, op, "x");
    if (status->skip != 0) return;
    const float* g = grads.as<const float>();
    float* m = momentum.as<float>();
    const float gradient_factor = 1.f / status->loss_scale;
    const auto update = [&](int64_t i) {
        return nesterov ? (1.f - mu) * (g[i] * gradient_factor) + mu * m[i] : m[i];
    };
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> partial(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const int64_t begin = chunk * kChunk, end = std::min(n, begin + kChunk);
        double lanes[kNormLanes] = {};
        for (int64_t i = begin; i < end; ++i) {
            m[i] = mu * m[i] + (1.f - mu) * (g[i] * gradient_factor);
            const float u = update(i);
            lanes[(i - begin) % kNormLanes] += static_cast<double>(u) * u;
        }
        double sum = 0.0;
        for (double lane : lanes) sum += lane;
        partial[static_cast<size_t>(chunk)] = sum;
    }
    double total = 0.0;
    for (double sum : partial) total += sum;
    const float inverse = 1.f / (static_cast<float>(std::sqrt(total)) + kNormEpsilon);
    const size_t element = dtype_size(x.dtype);
#pragma omp parallel for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const int64_t begin = chunk * kChunk, end = std::min(n, begin + kChunk);
        float normalized[kChunk];
        for (int64_t i = begin; i < end; ++i) normalized[i - begin] = update(i) * inverse;
        convert_from_float(normalized, x.as<char>() + static_cast<size_t>(begin) * element, x.dtype,
                           static_cast<size_t>(end - begin));
    }
}

void CpuBackend::muon_newton_schulz(TensorView x, int steps, const StepStatus* status) {
    const char* op = "muon_newton_schulz";
    require(status != nullptr, op, "status is null");
    require_muon_x(x, op);
    require_rank(x, x.dtype, 3, op, "x");
    require(steps >= 0, op, "steps must not be negative");
    if (status->skip != 0 || steps == 0) return;
    const int64_t batch = x.dim(0), rows = x.dim(1), cols = x.dim(2), s = std::min(rows, cols);
    FloatOutput values(scratch_, x, true);  // (batch, rows, cols)
    ScratchLease gram = scratch_.borrow(static_cast<size_t>(s * s));
    ScratchLease poly = scratch_.borrow(static_cast<size_t>(s * s));
    ScratchLease product = scratch_.borrow(static_cast<size_t>(rows * cols));
    for (int64_t b = 0; b < batch; ++b)
        newton_schulz_matrix(values.data() + b * rows * cols, rows, cols, steps, x.dtype, gram.data(),
                             poly.data(), product.data());
    values.store();
}

void CpuBackend::muon_update(TensorView params, TensorView working, TensorView x, float learning_rate,
                             float scale, float weight_decay, bool stochastic_rounding, uint64_t seed,
                             const StepStatus* status) {
    const char* op = "muon_update";
    require(status != nullptr, op, "status is null");
    require_rank(params, DType::f32, 2, op, "params");
    const int64_t rows = params.dim(0), cols = params.dim(1), n = rows * cols;
    require_muon_x(x, op);
    require_tensor(x, x.dtype, {rows, cols}, op, "x");
    const bool separate_working = working.valid() && working.data != params.data;
    if (separate_working) require_tensor(working, act(), {rows, cols}, op, "working");
    require(separate_working || act() == DType::f32, op, "a 16-bit run needs a separate working copy");
    if (status->skip != 0) return;
    FloatInput update(scratch_, x);  // (rows, cols)
    const float* u = update.data();
    float* p = params.as<float>();
    const DType working_dtype = act();
    const size_t working_element = dtype_size(working_dtype);
    const bool stochastic = separate_working && stochastic_rounding && working_dtype == DType::bf16;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const int64_t begin = chunk * kChunk, end = std::min(n, begin + kChunk);
        for (int64_t i = begin; i < end; ++i) p[i] -= learning_rate * (scale * u[i] + weight_decay * p[i]);
        if (stochastic) {
            for (int64_t i = begin; i < end; ++i)
                working.as<uint16_t>()[i] = stochastic_bf16_bits(p[i], seed, i);
        } else if (separate_working) {
            convert_from_float(p + begin, working.as<char>() + static_cast<size_t>(begin) * working_element,
                               working_dtype, static_cast<size_t>(end - begin));
        }
    }
}

}  // namespace mixgpt::cpu
