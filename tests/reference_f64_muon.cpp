#include "tests/reference_f64_muon.h"

#include <algorithm>
#include <cmath>

namespace mixgpt {
namespace {

constexpr double kA = 3.4445, kB = -4.7750, kC = 2.0315;

F64Vector stored_as(F64Vector values, DType dtype) {
    if (dtype == DType::f32) return values;
    for (double& value : values) value = round_to_dtype(static_cast<float>(value), dtype);
    return values;
}

// (m, k) x (k, n), row-major.
F64Vector product(const F64Vector& left, const F64Vector& right, int64_t m, int64_t k, int64_t n) {
    F64Vector out(static_cast<size_t>(m * n), 0.0);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p)
            for (int64_t j = 0; j < n; ++j) out[i * n + j] += left[i * k + p] * right[p * n + j];
    return out;
}

F64Vector transposed(const F64Vector& values, int64_t rows, int64_t cols) {
    F64Vector out(values.size());
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) out[j * rows + i] = values[i * cols + j];
    return out;
}

}  // namespace

F64Vector f64_newton_schulz(const F64Vector& u, int64_t rows, int64_t cols, int ns_steps, DType stored) {
    const bool tall = rows > cols;
    const int64_t r = tall ? cols : rows, c = tall ? rows : cols;  // the wide orientation
    F64Vector x = tall ? transposed(u, rows, cols) : u;
    for (int step = 0; step < ns_steps; ++step) {
        const F64Vector a = stored_as(product(x, transposed(x, r, c), r, c, r), stored);
        const F64Vector aa = product(a, a, r, r, r);
        F64Vector b(a.size());
        for (size_t i = 0; i < b.size(); ++i) b[i] = kB * a[i] + kC * aa[i];
        b = stored_as(b, stored);
        const F64Vector bx = product(b, x, r, r, c);
        for (size_t i = 0; i < x.size(); ++i) x[i] = kA * x[i] + bx[i];
        x = stored_as(x, stored);
    }
    return tall ? transposed(x, r, c) : x;
}

F64Vector f64_muon_step(F64Vector& params, F64Vector& momentum, const F64Vector& grads, int64_t rows,
                        int64_t cols, const F64MuonHyper& hyper, DType stored) {
    F64Vector u(grads.size());
    double sum = 0;
    for (size_t i = 0; i < grads.size(); ++i) {
        const double g = grads[i] / hyper.loss_scale;
        momentum[i] = hyper.mu * momentum[i] + (1 - hyper.mu) * g;
        u[i] = hyper.nesterov ? (1 - hyper.mu) * g + hyper.mu * momentum[i] : momentum[i];
        sum += u[i] * u[i];
    }
    const double norm = std::sqrt(sum) + 1e-7;
    for (double& value : u) value /= norm;
    const F64Vector x = f64_newton_schulz(stored_as(u, stored), rows, cols, hyper.ns_steps, stored);
    const double scale = std::sqrt(std::max(1.0, static_cast<double>(rows) / static_cast<double>(cols)));
    for (size_t i = 0; i < params.size(); ++i)
        params[i] -= hyper.learning_rate * (scale * x[i] + hyper.weight_decay * params[i]);
    return x;
}

}  // namespace mixgpt
