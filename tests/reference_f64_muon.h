// One Muon step in float64, written from the formulas (#37) without the kernels, to judge
// kernels/cpu/muon.cpp and train/muon_step.h by:
//   g = grads / loss_scale
//   momentum = mu momentum + (1 - mu) g;  u = (1 - mu) g + mu momentum (nesterov) or momentum
//   X = u / (||u||_F + 1e-7), transposed first when rows > cols (the wide orientation)
//   ns_steps times: A = X X^T;  B = b A + c A A;  X = a X + B X   (a, b, c) = (3.4445, -4.7750, 2.0315)
//   X transposed back; params -= lr (max(1, rows/cols)^(1/2) X + weight_decay params)
// `stored`: the dtype the kernels store X, A and B in; the reference rounds each to it where a
// kernel stores it (f32 for float64 throughout but the inputs).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "tests/reference_f64.h"

namespace mixgpt {

struct F64MuonHyper {
    double loss_scale = 1, mu = 0.95, learning_rate = 0.02, weight_decay = 0;
    bool nesterov = true;
    int ns_steps = 5;
};

// The orthogonalised update X (rows, cols) of a normalised u (rows, cols).
F64Vector f64_newton_schulz(const F64Vector& u, int64_t rows, int64_t cols, int ns_steps, DType stored);

// Updates params and momentum (rows, cols) in place; returns X.
F64Vector f64_muon_step(F64Vector& params, F64Vector& momentum, const F64Vector& grads, int64_t rows,
                        int64_t cols, const F64MuonHyper& hyper, DType stored);

}  // namespace mixgpt
