// Finite-difference checks of every backward in the float64 reference
// (tests/reference_f64.h). For an op y = f(x) and a random cotangent w, the
// scalar L(x) = <w, f(x)> is differentiated by central differences in float64,
// dL/dx_i ~ (L(x + h e_i) - L(x - h e_i)) / 2h with h = 1e-6, and compared with
// the reference backward fed w. The truncation error is O(h^2) ~ 1e-12 and the
// cancellation error ~ 1e-16 / h ~ 1e-10 (relative), so a bound of 1e-6 on the
// relative norm error leaves a wide margin while any wrong term gives O(1) errors.
// The CPU backend's ops are then checked against these validated references
// (tests/test_cpu_*.cpp), so every backward is tied to its forward by differences.
#include <gtest/gtest.h>

#include <functional>

#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

constexpr double kStep = 1e-6;
constexpr double kTolerance = 1e-6;

using Scalar = std::function<double(const F64Vector&)>;

F64Vector numeric_gradient(const Scalar& loss, F64Vector x) {
    F64Vector gradient(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const double saved = x[i];
        x[i] = saved + kStep;
        const double up = loss(x);
        x[i] = saved - kStep;
        const double down = loss(x);
        x[i] = saved;
        gradient[i] = (up - down) / (2 * kStep);
    }
    return gradient;
}

double inner(const F64Vector& a, const F64Vector& b) {
    double sum = 0.0;
    for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
    return sum;
}

F64Vector add(F64Vector a, const F64Vector& b) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    return a;
}

void expect_gradient(const F64Vector& analytic, const Scalar& loss, const F64Vector& x, const char* what) {
    EXPECT_LE(relative_norm_error(analytic, numeric_gradient(loss, x)), kTolerance) << what;
}

TEST(GradcheckF64, Embedding) {
    const int B = 2, T = 3, C = 4, V = 5, maxT = 4;
    const std::vector<int32_t> tokens = {0, 3, 3, 1, 4, 0};
    const F64Vector wte = test::random_normal(V * C, 1), wpe = test::random_normal(maxT * C, 2);
    const F64Vector w = test::random_normal(B * T * C, 3);
    F64Vector dwte(wte.size()), dwpe(wpe.size());
    f64_embedding_backward(dwte, dwpe, w, tokens, B, T, C);
    expect_gradient(
        dwte, [&](const F64Vector& x) { return inner(w, f64_embedding_forward(tokens, x, wpe, B, T, C)); },
        wte, "dwte");
    expect_gradient(
        dwpe, [&](const F64Vector& x) { return inner(w, f64_embedding_forward(tokens, wte, x, B, T, C)); },
        wpe, "dwpe");
}

TEST(GradcheckF64, LayerNorm) {
    const int N = 3, C = 8;
    const F64Vector inp = test::random_normal(N * C, 10, 2.0), weight = test::random_normal(C, 11);
    const F64Vector bias = test::random_normal(C, 12), w = test::random_normal(N * C, 13);
    const F64LayerNormBackward g = f64_layernorm_backward(w, inp, weight, N, C);
    expect_gradient(
        g.dinp,
        [&](const F64Vector& x) { return inner(w, f64_layernorm_forward(x, weight, bias, N, C).out); }, inp,
        "dinp");
    expect_gradient(
        g.dweight,
        [&](const F64Vector& x) { return inner(w, f64_layernorm_forward(inp, x, bias, N, C).out); }, weight,
        "dweight");
    expect_gradient(
        g.dbias,
        [&](const F64Vector& x) { return inner(w, f64_layernorm_forward(inp, weight, x, N, C).out); }, bias,
        "dbias");
}

// The fused residual add: both outputs depend on both inputs; the model's backward adds the
// residual path's gradient to layernorm_backward's dinp.
TEST(GradcheckF64, ResidualLayerNorm) {
    const int N = 3, C = 8;
    const F64Vector residual = test::random_normal(N * C, 20), branch = test::random_normal(N * C, 21);
    const F64Vector weight = test::random_normal(C, 22), bias = test::random_normal(C, 23);
    const F64Vector w_sum = test::random_normal(N * C, 24), w_norm = test::random_normal(N * C, 25);
    auto loss = [&](const F64Vector& a, const F64Vector& b) {
        const F64ResidualLayerNormForward y = f64_residual_layernorm_forward(a, b, weight, bias, N, C);
        return inner(w_sum, y.residual_out) + inner(w_norm, y.norm.out);
    };
    const F64Vector sum = add(residual, branch);
    const F64Vector analytic = add(w_sum, f64_layernorm_backward(w_norm, sum, weight, N, C).dinp);
    expect_gradient(
        analytic, [&](const F64Vector& x) { return loss(x, branch); }, residual, "d residual_in");
    expect_gradient(
        analytic, [&](const F64Vector& x) { return loss(residual, x); }, branch, "d branch");
}

TEST(GradcheckF64, RmsNorm) {
    const int N = 3, C = 8;
    const double epsilon = 1e-5;
    const F64Vector inp = test::random_normal(N * C, 14, 2.0), weight = test::random_normal(C, 15);
    const F64Vector w = test::random_normal(N * C, 16);
    const F64RmsNormBackward g = f64_rmsnorm_backward(w, inp, weight, N, C, epsilon);
    expect_gradient(
        g.dinp,
        [&](const F64Vector& x) { return inner(w, f64_rmsnorm_forward(x, weight, N, C, epsilon).out); }, inp,
        "dinp");
    expect_gradient(
        g.dweight,
        [&](const F64Vector& x) { return inner(w, f64_rmsnorm_forward(inp, x, N, C, epsilon).out); }, weight,
        "dweight");
}

// As ResidualLayerNorm: the model adds the residual path's gradient to rmsnorm_backward's dinp.
TEST(GradcheckF64, ResidualRmsNorm) {
    const int N = 3, C = 8;
    const double epsilon = 1e-6;
    const F64Vector residual = test::random_normal(N * C, 26), branch = test::random_normal(N * C, 27);
    const F64Vector weight = test::random_normal(C, 28);
    const F64Vector w_sum = test::random_normal(N * C, 29), w_norm = test::random_normal(N * C, 19);
    auto loss = [&](const F64Vector& a, const F64Vector& b) {
        const F64ResidualRmsNormForward y = f64_residual_rmsnorm_forward(a, b, weight, N, C, epsilon);
        return inner(w_sum, y.residual_out) + inner(w_norm, y.norm.out);
    };
    const F64Vector analytic =
        add(w_sum, f64_rmsnorm_backward(w_norm, add(residual, branch), weight, N, C, epsilon).dinp);
    expect_gradient(
        analytic, [&](const F64Vector& x) { return loss(x, branch); }, residual, "d residual_in");
    expect_gradient(
        analytic, [&](const F64Vector& x) { return loss(residual, x); }, branch, "d branch");
}

TEST(GradcheckF64, MatmulWithBiasAndGelu) {
    const int M = 3, K = 5, N = 4;
    const F64Vector inp = test::random_normal(M * K, 30), weight = test::random_normal(N * K, 31);
    const F64Vector bias = test::random_normal(N, 32), w = test::random_normal(M * N, 33);
    for (bool gelu : {false, true}) {
        auto loss = [&](const F64Vector& a, const F64Vector& b, const F64Vector& c) {
            return inner(w, f64_matmul_forward(a, b, c, M, K, N, gelu).out);
        };
        const F64MatmulForward y = f64_matmul_forward(inp, weight, bias, M, K, N, gelu);
        const F64Vector dproduct = gelu ? f64_gelu_backward(w, y.pre_gelu) : w;
        const F64MatmulWeightGradient g = f64_matmul_backward_weight(dproduct, inp, M, K, N);
        expect_gradient(
            f64_matmul_backward_input(dproduct, weight, M, K, N),
            [&](const F64Vector& x) { return loss(x, weight, bias); }, inp, "dinp");
        expect_gradient(
            g.dweight, [&](const F64Vector& x) { return loss(inp, x, bias); }, weight, "dweight");
        expect_gradient(
            g.dbias, [&](const F64Vector& x) { return loss(inp, weight, x); }, bias, "dbias");
    }
}

TEST(GradcheckF64, Gelu) {
    const F64Vector inp = test::random_normal(40, 40, 3.0), w = test::random_normal(40, 41);
    expect_gradient(
        f64_gelu_backward(w, inp), [&](const F64Vector& x) { return inner(w, f64_gelu_forward(x)); }, inp,
        "dinp");
}

TEST(GradcheckF64, Relu2) {
    const F64Vector inp = test::random_normal(40, 44, 3.0), w = test::random_normal(40, 45);
    expect_gradient(
        f64_relu2_backward(w, inp), [&](const F64Vector& x) { return inner(w, f64_relu2_forward(x)); }, inp,
        "dinp");
}

TEST(GradcheckF64, SwiGlu) {
    const int M = 3, F = 5;
    const F64Vector gate_up = test::random_normal(M * 2 * F, 42, 3.0), w = test::random_normal(M * F, 43);
    expect_gradient(
        f64_swiglu_backward(w, gate_up, M, F),
        [&](const F64Vector& x) { return inner(w, f64_swiglu_forward(x, M, F)); }, gate_up, "dgate_up");
}

TEST(GradcheckF64, QkNorm) {
    const int N = 3, H = 4, Hkv = 2, hd = 6;
    const int width = (H + 2 * Hkv) * hd;
    const F64Vector qkv = test::random_normal(N * width, 46, 2.0), w = test::random_normal(N * width, 47);
    const double epsilon = 1e-5;
    expect_gradient(
        f64_qk_norm_backward(w, qkv, N, H, Hkv, hd, epsilon),
        [&](const F64Vector& x) { return inner(w, f64_qk_norm_forward(x, N, H, Hkv, hd, epsilon).qkv); }, qkv,
        "dqkv");
}

TEST(GradcheckF64, CausalAttention) {
    const int B = 2, T = 4, C = 8, H = 2;
    const F64Vector qkv = test::random_normal(B * T * 3 * C, 50, 1.5), w = test::random_normal(B * T * C, 51);
    expect_gradient(
        f64_attention_backward(w, qkv, B, T, C, H),
        [&](const F64Vector& x) { return inner(w, f64_attention_forward(x, B, T, C, H).out); }, qkv, "dqkv");
}

// Grouped key/value heads (2 query heads per key/value head, and 1 key/value head for 3 query heads)
// with and without RoPE: dk and dv sum over the group, and dq, dk are rotated back.
TEST(GradcheckF64, GroupedQueryAttentionWithRope) {
    const int B = 2, T = 4, hd = 4;
    for (const AttentionParams& params : {AttentionParams{4, 2, 0.f}, AttentionParams{4, 2, 10.f},
                                          AttentionParams{3, 1, 10.f}, AttentionParams{2, 2, 10.f}}) {
        SCOPED_TRACE("H " + std::to_string(params.n_head) + ", Hkv " + std::to_string(params.n_kv_head) +
                     ", theta " + std::to_string(params.rope_theta));
        const int width = (params.n_head + 2 * params.n_kv_head) * hd;
        const F64Vector qkv = test::random_normal(B * T * width, 52, 1.5);
        const F64Vector w = test::random_normal(B * T * params.n_head * hd, 53);
        expect_gradient(
            f64_attention_backward(w, qkv, B, T, hd, params),
            [&](const F64Vector& x) { return inner(w, f64_attention_forward(x, B, T, hd, params).out); }, qkv,
            "dqkv");
    }
}

TEST(GradcheckF64, ClassifierWithPaddedVocabulary) {
    const int N = 3, V = 6, Vp = 8;
    const double gradient_scale = 0.25, loss_scale = 8.0;
    const F64Vector logits = test::random_normal(N * Vp, 60, 2.0);
    const std::vector<int32_t> targets = {5, 0, 2};
    auto loss = [&](const F64Vector& x) {
        double sum = 0.0;
        for (double l : f64_classifier(x, targets, N, Vp, V, 1.0, 1.0).losses) sum += l;
        return gradient_scale * loss_scale * sum;
    };
    expect_gradient(f64_classifier(logits, targets, N, Vp, V, gradient_scale, loss_scale).dlogits, loss,
                    logits, "dlogits");
}

TEST(GradcheckF64, ClassifierWithSoftcapAndZLoss) {
    const int N = 3, V = 6, Vp = 8;
    const double gradient_scale = 0.25, loss_scale = 8.0, softcap = 3.0, z_loss = 0.1;
    const F64Vector logits = test::random_normal(N * Vp, 61, 4.0);
    const std::vector<int32_t> targets = {5, 0, 2};
    auto loss = [&](const F64Vector& x) {
        const F64Classifier c = f64_classifier(x, targets, N, Vp, V, 1.0, 1.0, softcap, z_loss);
        double sum = 0.0;
        for (int i = 0; i < N; ++i)
            sum += c.losses[static_cast<size_t>(i)] + c.z_losses[static_cast<size_t>(i)];
        return gradient_scale * loss_scale * sum;
    };
    expect_gradient(
        f64_classifier(logits, targets, N, Vp, V, gradient_scale, loss_scale, softcap, z_loss).dlogits, loss,
        logits, "dlogits");
}

// The reference's own forward definitions, against values computed by hand.
TEST(ReferenceF64, ForwardDefinitions) {
    // LayerNorm of (1, 2, 3): mean 2, variance 2/3.
    const F64LayerNormForward norm = f64_layernorm_forward({1, 2, 3}, {1, 1, 1}, {0, 0, 0}, 1, 3);
    EXPECT_DOUBLE_EQ(norm.mean[0], 2.0);
    EXPECT_DOUBLE_EQ(norm.rstd[0], 1.0 / std::sqrt(2.0 / 3.0 + 1e-5));
    // Position 1 (q = 1) over keys 0 and 1 (head_dim 1, scale 1): scores 0 and 1, lse = log(1 + e).
    const F64AttentionForward attention = f64_attention_forward({0, 0, 10, 1, 1, 20}, 1, 2, 1, 1);
    EXPECT_DOUBLE_EQ(attention.lse[1], std::log(1.0 + std::exp(1.0)));
    EXPECT_DOUBLE_EQ(attention.out[1], (10.0 + 20.0 * std::exp(1.0)) / (1.0 + std::exp(1.0)));
    // Uniform logits over V: loss log V whatever Vp holds.
    const F64Classifier uniform = f64_classifier({0, 0, 0, 0, 99, 99, 99, 99}, {1}, 1, 8, 4, 1.0, 1.0);
    EXPECT_DOUBLE_EQ(uniform.losses[0], std::log(4.0));
    // Capped at 2: 30 becomes 2 tanh(15); z-loss 0.5 of uniform logits: 0.5 (log 4)^2.
    EXPECT_DOUBLE_EQ(f64_classifier({30, 0}, {0}, 1, 2, 2, 1.0, 1.0, 2.0).capped[0], 2.0 * std::tanh(15.0));
    EXPECT_DOUBLE_EQ(f64_classifier({0, 0, 0, 0}, {1}, 1, 4, 4, 1.0, 1.0, 0.0, 0.5).z_losses[0],
                     0.5 * std::log(4.0) * std::log(4.0));
    EXPECT_DOUBLE_EQ(f64_gelu(0.0), 0.0);
    // RMSNorm of (3, 4): mean square 12.5.
    const F64RmsNormForward rms = f64_rmsnorm_forward({3, 4}, {1, 2}, 1, 2, 0.5);
    EXPECT_DOUBLE_EQ(rms.rstd[0], 1.0 / std::sqrt(13.0));
    EXPECT_DOUBLE_EQ(rms.out[1], 8.0 / std::sqrt(13.0));
    // SwiGLU of gate 1, up 2: 2 silu(1).
    EXPECT_DOUBLE_EQ(f64_swiglu_forward({1, 2}, 1, 1)[0], 2.0 / (1.0 + std::exp(-1.0)));
    // RoPE, head_dim 2 (one pair, angle = position): q1 = k0 = k1 = (1, 0) rotate to (cos 1, sin 1),
    // (1, 0) and (cos 1, sin 1), so query 1 scores cos 1 and 1 (times 1/sqrt 2): only the
    // relative position counts. Row layout [q | k | v], v_s = (s, 0).
    const F64AttentionForward rotated =
        f64_attention_forward({9, 9, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0}, 1, 2, 2, AttentionParams{1, 1, 5.f});
    const double s0 = std::cos(1.0) / std::sqrt(2.0), s1 = 1.0 / std::sqrt(2.0);
    EXPECT_NEAR(rotated.lse[1], std::log(std::exp(s0) + std::exp(s1)), 1e-15);
    EXPECT_NEAR(rotated.out[2], std::exp(s1) / (std::exp(s0) + std::exp(s1)), 1e-15);
}

}  // namespace
}  // namespace mixgpt
