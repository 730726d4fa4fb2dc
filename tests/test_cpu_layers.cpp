// CPU backend ops against the float64 reference (tests/reference_f64.h): embedding,
// LayerNorm and RMSNorm (plain and with residual), matmul (bias, GELU epilogue, both backward
// forms), GELU, SwiGLU, ReLU², QK-norm. fp32 results meet the FP32 criterion; bf16/fp16 results, computed
// from inputs stored in that dtype, are within 2x the reference's own storage error.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernels/ops.h"
#include "tests/test_cpu_support.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

using test::HostTensor;
using test::IntTensor;

class CpuLayers : public ::testing::TestWithParam<Precision> {
protected:
    DType act() const { return activation_dtype(GetParam()); }
    HostTensor act_tensor(const std::vector<double>& values, std::initializer_list<int64_t> shape) const {
        return HostTensor(values, act(), shape);
    }
    static void expect_close(const HostTensor& out, const std::vector<double>& reference, const char* what) {
        const double error = relative_norm_error(out.values(), reference);
        const double bound = test::tolerance_for(reference, out.view().dtype);
        EXPECT_LE(error, bound) << what << " in " << dtype_name(out.view().dtype);
    }

    std::unique_ptr<Backend> backend = make_backend({"cpu", 0, GetParam(), 0});
};

// Rows t, and positions within documents (--positions document) with a table longer than T.
TEST_P(CpuLayers, EmbeddingForwardAndBackward) {
    const int B = 2, T = 5, C = 16, Vp = 128, maxT = 8;
    const IntTensor tokens(test::random_tokens(B * T, 100, 1), {B, T});
    const HostTensor wte = act_tensor(test::random_normal(Vp * C, 2), {Vp, C});
    const HostTensor wpe = act_tensor(test::random_normal(maxT * C, 3), {maxT, C});
    for (const bool documents : {false, true}) {
        SCOPED_TRACE(documents ? "document positions" : "rows t");
        const std::vector<int32_t> document_places = {0, 1, 0, 1, 2, 6, 7, 0, 0, 1};  // (B, T)
        const std::vector<int> places =
            documents ? std::vector<int>(document_places.begin(), document_places.end()) : std::vector<int>();
        const IntTensor positions(document_places, {B, T});
        const TensorView position_view = documents ? positions.view() : TensorView();
        HostTensor out(act(), {B, T, C});
        backend->embedding_forward(out.view(), tokens.view(), wte.view(), wpe.view(), position_view);
        expect_close(out, f64_embedding_forward(tokens.values(), wte.values(), wpe.values(), B, T, C, places),
                     "out");

        const HostTensor dout = act_tensor(test::random_normal(B * T * C, 4), {B, T, C});
        std::vector<double> dwte_ref = test::random_normal(Vp * C, 5),
                            dwpe_ref = test::random_normal(maxT * C, 6);
        HostTensor dwte(dwte_ref, DType::f32, {Vp, C}), dwpe(dwpe_ref, DType::f32, {maxT, C});
        dwte_ref = dwte.values();
        dwpe_ref = dwpe.values();
        backend->embedding_backward(dwte.view(), dwpe.view(), dout.view(), tokens.view(), position_view);
        f64_embedding_backward(dwte_ref, dwpe_ref, dout.values(), tokens.values(), B, T, C, places);
        expect_close(dwte, dwte_ref, "dwte");
        expect_close(dwpe, dwpe_ref, "dwpe");
    }
}

TEST_P(CpuLayers, EmbeddingRejectsTokensAndPositionsOutsideTheTables) {
    const IntTensor tokens({0, 128}, {1, 2});
    const HostTensor wte(act(), {128, 4}), wpe(act(), {2, 4});
    HostTensor out(act(), {1, 2, 4});
    EXPECT_THROW(backend->embedding_forward(out.view(), tokens.view(), wte.view(), wpe.view(), TensorView()), Error);
    const IntTensor good_tokens({0, 1}, {1, 2}), positions({0, 2}, {1, 2});
    const std::string error = test::error_of(
        [&] { backend->embedding_forward(out.view(), good_tokens.view(), wte.view(), wpe.view(), positions.view()); });
    EXPECT_NE(error.find("position 2 at index 1 is outside [0, 2)"), std::string::npos) << error;
}

TEST_P(CpuLayers, EmbeddingRejectsFloatTokens) {
    const HostTensor float_tokens(DType::f32, {1, 2});  // 4-byte elements, but not DType::i32
    const HostTensor wte(act(), {128, 4}), wpe(act(), {2, 4});
    HostTensor out(act(), {1, 2, 4});
    const std::string forward = test::error_of(
        [&] { backend->embedding_forward(out.view(), float_tokens.view(), wte.view(), wpe.view(), TensorView()); });
    EXPECT_NE(forward.find("embedding_forward: tokens is (1, 2) fp32, expected (1, 2) int32"),
              std::string::npos)
        << forward;
    HostTensor dwte(DType::f32, {128, 4}), dwpe(DType::f32, {2, 4});
    const std::string backward = test::error_of(
        [&] {
            backend->embedding_backward(dwte.view(), dwpe.view(), out.view(), float_tokens.view(), TensorView());
        });
    EXPECT_NE(backward.find("embedding_backward: tokens"), std::string::npos) << backward;
}

TEST_P(CpuLayers, LayerNormForward) {
    const int N = 6, C = 24;
    const HostTensor inp = act_tensor(test::random_normal(N * C, 10, 3.0), {N, C});
    const HostTensor weight = act_tensor(test::random_normal(C, 11), {C});
    const HostTensor bias = act_tensor(test::random_normal(C, 12), {C});
    HostTensor out(act(), {N, C}), mean(DType::f32, {N}), rstd(DType::f32, {N});
    backend->layernorm_forward(out.view(), mean.view(), rstd.view(), inp.view(), weight.view(), bias.view());
    const F64LayerNormForward ref = f64_layernorm_forward(inp.values(), weight.values(), bias.values(), N, C);
    expect_close(out, ref.out, "out");
    expect_close(mean, ref.mean, "mean");
    expect_close(rstd, ref.rstd, "rstd");
}

TEST_P(CpuLayers, ResidualLayerNormForwardNormalizesTheStoredSum) {
    const int N = 6, C = 24;
    const HostTensor residual_in = act_tensor(test::random_normal(N * C, 20), {N, C});
    const HostTensor branch = act_tensor(test::random_normal(N * C, 21), {N, C});
    const HostTensor weight = act_tensor(test::random_normal(C, 22), {C});
    const HostTensor bias = act_tensor(test::random_normal(C, 23), {C});
    HostTensor residual_out(act(), {N, C}), out(act(), {N, C}), mean(DType::f32, {N}), rstd(DType::f32, {N});
    backend->residual_layernorm_forward(residual_out.view(), out.view(), mean.view(), rstd.view(),
                                        residual_in.view(), branch.view(), weight.view(), bias.view());
    const F64ResidualLayerNormForward ref = f64_residual_layernorm_forward(
        residual_in.values(), branch.values(), weight.values(), bias.values(), N, C);
    expect_close(residual_out, ref.residual_out, "residual_out");
    expect_close(out, ref.norm.out, "out");

    // Recomputing the norm from residual_out (activation checkpointing) gives the same bits.
    HostTensor again(act(), {N, C}), mean_again(DType::f32, {N}), rstd_again(DType::f32, {N});
    backend->layernorm_forward(again.view(), mean_again.view(), rstd_again.view(), residual_out.view(),
                               weight.view(), bias.view());
    EXPECT_EQ(again.values(), out.values());
    EXPECT_EQ(mean_again.values(), mean.values());
    EXPECT_EQ(rstd_again.values(), rstd.values());
}

TEST_P(CpuLayers, LayerNormBackwardAccumulates) {
    const int N = 6, C = 24;
    const HostTensor inp = act_tensor(test::random_normal(N * C, 30, 2.0), {N, C});
    const HostTensor weight = act_tensor(test::random_normal(C, 31), {C});
    const HostTensor bias = act_tensor(test::random_normal(C, 32), {C});
    const HostTensor dout = act_tensor(test::random_normal(N * C, 33), {N, C});
    HostTensor out(act(), {N, C}), mean(DType::f32, {N}), rstd(DType::f32, {N});
    backend->layernorm_forward(out.view(), mean.view(), rstd.view(), inp.view(), weight.view(), bias.view());
    HostTensor dinp = act_tensor(test::random_normal(N * C, 34), {N, C});
    HostTensor dweight(test::random_normal(C, 35), DType::f32, {C}),
        dbias(test::random_normal(C, 36), DType::f32, {C});
    std::vector<double> dinp_ref = dinp.values(), dweight_ref = dweight.values(), dbias_ref = dbias.values();
    backend->layernorm_backward(dinp.view(), dweight.view(), dbias.view(), dout.view(), inp.view(),
                                weight.view(), mean.view(), rstd.view());
    const F64LayerNormBackward ref =
        f64_layernorm_backward(dout.values(), inp.values(), weight.values(), N, C);
    for (size_t i = 0; i < dinp_ref.size(); ++i) dinp_ref[i] += ref.dinp[i];
    for (int c = 0; c < C; ++c) {
        dweight_ref[static_cast<size_t>(c)] += ref.dweight[static_cast<size_t>(c)];
        dbias_ref[static_cast<size_t>(c)] += ref.dbias[static_cast<size_t>(c)];
    }
    expect_close(dinp, dinp_ref, "dinp");
    expect_close(dweight, dweight_ref, "dweight");
    expect_close(dbias, dbias_ref, "dbias");
}

// RMSNorm's eps is a parameter: 1e-5 and Llama's 1e-6 give different rstd on rows of small values.
TEST_P(CpuLayers, RmsNormForward) {
    const int N = 6, C = 24;
    const HostTensor inp = act_tensor(test::random_normal(N * C, 110, 0.01), {N, C});
    const HostTensor weight = act_tensor(test::random_normal(C, 111), {C});
    for (const float epsilon : {1e-5f, 1e-6f}) {
        HostTensor out(act(), {N, C}), rstd(DType::f32, {N});
        backend->rmsnorm_forward(out.view(), rstd.view(), inp.view(), weight.view(), epsilon);
        const F64RmsNormForward ref = f64_rmsnorm_forward(inp.values(), weight.values(), N, C, epsilon);
        expect_close(out, ref.out, "out");
        expect_close(rstd, ref.rstd, "rstd");
    }
}

TEST_P(CpuLayers, ResidualRmsNormForwardNormalizesTheStoredSum) {
    const int N = 6, C = 40;
    const float epsilon = 1e-6f;
    const HostTensor residual_in = act_tensor(test::random_normal(N * C, 120), {N, C});
    const HostTensor branch = act_tensor(test::random_normal(N * C, 121), {N, C});
    const HostTensor weight = act_tensor(test::random_normal(C, 122), {C});
    HostTensor residual_out(act(), {N, C}), out(act(), {N, C}), rstd(DType::f32, {N});
    backend->residual_rmsnorm_forward(residual_out.view(), out.view(), rstd.view(), residual_in.view(),
                                      branch.view(), weight.view(), epsilon);
    const F64ResidualRmsNormForward ref =
        f64_residual_rmsnorm_forward(residual_in.values(), branch.values(), weight.values(), N, C, epsilon);
    expect_close(residual_out, ref.residual_out, "residual_out");
    expect_close(out, ref.norm.out, "out");

    // Recomputing the norm from residual_out (activation checkpointing) gives the same bits.
    HostTensor again(act(), {N, C}), rstd_again(DType::f32, {N});
    backend->rmsnorm_forward(again.view(), rstd_again.view(), residual_out.view(), weight.view(), epsilon);
    EXPECT_EQ(again.values(), out.values());
    EXPECT_EQ(rstd_again.values(), rstd.values());
}

TEST_P(CpuLayers, RmsNormBackwardAccumulates) {
    const int N = 6, C = 40;
    const float epsilon = 1e-5f;
    const HostTensor inp = act_tensor(test::random_normal(N * C, 130, 2.0), {N, C});
    const HostTensor weight = act_tensor(test::random_normal(C, 131), {C});
    const HostTensor dout = act_tensor(test::random_normal(N * C, 133), {N, C});
    HostTensor out(act(), {N, C}), rstd(DType::f32, {N});
    backend->rmsnorm_forward(out.view(), rstd.view(), inp.view(), weight.view(), epsilon);
    HostTensor dinp = act_tensor(test::random_normal(N * C, 134), {N, C});
    HostTensor dweight(test::random_normal(C, 135), DType::f32, {C});
    std::vector<double> dinp_ref = dinp.values(), dweight_ref = dweight.values();
    backend->rmsnorm_backward(dinp.view(), dweight.view(), dout.view(), inp.view(), weight.view(),
                              rstd.view());
    const F64RmsNormBackward ref =
        f64_rmsnorm_backward(dout.values(), inp.values(), weight.values(), N, C, epsilon);
    for (size_t i = 0; i < dinp_ref.size(); ++i) dinp_ref[i] += ref.dinp[i];
    for (size_t c = 0; c < dweight_ref.size(); ++c) dweight_ref[c] += ref.dweight[c];
    expect_close(dinp, dinp_ref, "dinp");
    expect_close(dweight, dweight_ref, "dweight");
}

// Gates of std 3 reach both tails of silu; F = 37 leaves a remainder after every vector width.
// Parameter-free norms (--norm-weights false: weight, bias and their gradients invalid) give the
// bits of a weight of ones and a bias of zeros, forward (alone and fused with the residual add) and
// backward, and add nothing to any parameter gradient.
TEST_P(CpuLayers, ParameterFreeNormsEqualWeightsOfOnes) {
    const int N = 6, C = 24;
    const HostTensor inp = act_tensor(test::random_normal(N * C, 40, 2.0), {N, C});
    const HostTensor branch = act_tensor(test::random_normal(N * C, 41), {N, C});
    const HostTensor dout = act_tensor(test::random_normal(N * C, 42), {N, C});
    const HostTensor ones = act_tensor(std::vector<double>(C, 1.0), {C}), zeros(act(), {C});
    for (bool layernorm : {true, false}) {
        SCOPED_TRACE(layernorm ? "layernorm" : "rmsnorm");
        struct Outputs {
            HostTensor out, residual_out, dinp, mean, rstd;
        };
        const auto run = [&](bool parameter_free) {
            Outputs o{HostTensor(act(), {N, C}), HostTensor(act(), {N, C}),
                      act_tensor(test::random_normal(N * C, 43), {N, C}), HostTensor(DType::f32, {N}),
                      HostTensor(DType::f32, {N})};
            HostTensor dweight(DType::f32, {C}), dbias(DType::f32, {C});
            const TensorView w = parameter_free ? TensorView() : ones.view();
            const TensorView b = parameter_free ? TensorView() : zeros.view();
            const TensorView dw = parameter_free ? TensorView() : dweight.view();
            const TensorView db = parameter_free ? TensorView() : dbias.view();
            if (layernorm) {
                backend->residual_layernorm_forward(o.residual_out.view(), o.out.view(), o.mean.view(),
                                                    o.rstd.view(), inp.view(), branch.view(), w, b);
                backend->layernorm_backward(o.dinp.view(), dw, db, dout.view(), o.residual_out.view(), w,
                                            o.mean.view(), o.rstd.view());
            } else {
                backend->residual_rmsnorm_forward(o.residual_out.view(), o.out.view(), o.rstd.view(),
                                                  inp.view(), branch.view(), w, 1e-5f);
                backend->rmsnorm_backward(o.dinp.view(), dw, dout.view(), o.residual_out.view(), w,
                                          o.rstd.view());
            }
            return o;
        };
        const Outputs free = run(true), weighted = run(false);
        EXPECT_EQ(free.out.values(), weighted.out.values());
        EXPECT_EQ(free.residual_out.values(), weighted.residual_out.values());
        EXPECT_EQ(free.rstd.values(), weighted.rstd.values());
        EXPECT_EQ(free.dinp.values(), weighted.dinp.values());
        // And against float64 with a weight of ones (the weighted path's own check is above).
        const std::vector<double> ones_ref(C, 1.0);
        const F64Vector expected =
            layernorm ? f64_layernorm_forward(free.residual_out.values(), ones_ref,
                                              std::vector<double>(C, 0.0), N, C)
                            .out
                      : f64_rmsnorm_forward(free.residual_out.values(), ones_ref, N, C, 1e-5).out;
        expect_close(free.out, expected, "out");
    }
}

TEST_P(CpuLayers, SwiGluForwardAndBackward) {
    const int M = 5, F = 37;
    const HostTensor gate_up = act_tensor(test::random_normal(M * 2 * F, 140, 3.0), {M, 2 * F});
    HostTensor out(act(), {M, F});
    backend->swiglu_forward(out.view(), gate_up.view());
    expect_close(out, f64_swiglu_forward(gate_up.values(), M, F), "out");
    HostTensor again(act(), {M, F});  // a recomputation from the stored product
    backend->swiglu_forward(again.view(), gate_up.view());
    EXPECT_EQ(again.values(), out.values());

    const HostTensor dout = act_tensor(test::random_normal(M * F, 141), {M, F});
    HostTensor dgate_up = act_tensor(test::random_normal(M * 2 * F, 142), {M, 2 * F});  // overwritten
    backend->swiglu_backward(dgate_up.view(), dout.view(), gate_up.view());
    expect_close(dgate_up, f64_swiglu_backward(dout.values(), gate_up.values(), M, F), "dgate_up");
    EXPECT_THROW(backend->swiglu_backward(gate_up.view(), dout.view(), gate_up.view()), Error);  // in place
}

// The second shape spans several sgemm tiles (64 rows x 1024 columns, tiled_gemm.cpp) in both
// directions, so the bias + GELU epilogue runs on tiles away from the origin.
TEST_P(CpuLayers, MatmulForwardWithBiasAndGelu) {
    struct Shape {
        int M, K, N;
    };
    for (const Shape shape : {Shape{7, 24, 10}, Shape{70, 8, 1030}}) {
        const int M = shape.M, K = shape.K, N = shape.N;
        SCOPED_TRACE("M " + std::to_string(M) + ", N " + std::to_string(N));
        const HostTensor inp = act_tensor(test::random_normal(M * K, 40), {M, K});
        const HostTensor weight = act_tensor(test::random_normal(N * K, 41, 0.3), {N, K});
        const HostTensor bias = act_tensor(test::random_normal(N, 42), {N});
        HostTensor out(act(), {M, N});
        backend->matmul_forward(out.view(), TensorView(), inp.view(), weight.view(), bias.view(),
                                MatmulEpilogue::bias);
        expect_close(
            out, f64_matmul_forward(inp.values(), weight.values(), bias.values(), M, K, N, false).out, "out");

        HostTensor plain(act(), {M, N});
        backend->matmul_forward(plain.view(), TensorView(), inp.view(), weight.view(), TensorView(),
                                MatmulEpilogue::none);
        expect_close(plain, f64_matmul_forward(inp.values(), weight.values(), {}, M, K, N, false).out,
                     "no bias");

        HostTensor activated(act(), {M, N}), pre_gelu(act(), {M, N});
        backend->matmul_forward(activated.view(), pre_gelu.view(), inp.view(), weight.view(), bias.view(),
                                MatmulEpilogue::bias_gelu);
        const F64MatmulForward ref =
            f64_matmul_forward(inp.values(), weight.values(), bias.values(), M, K, N, true);
        expect_close(pre_gelu, ref.pre_gelu, "pre_gelu");
        // out is GELU of the stored pre-activation: judged against the float64 GELU of those values.
        expect_close(activated, f64_gelu_forward(pre_gelu.values()), "gelu out");
        HostTensor recomputed(act(), {M, N});
        backend->gelu_forward(recomputed.view(), pre_gelu.view());
        EXPECT_EQ(recomputed.values(), activated.values());
    }
}

TEST_P(CpuLayers, MatmulBackward) {
    const int M = 9, K = 20, N = 12;
    const HostTensor dout = act_tensor(test::random_normal(M * N, 50), {M, N});
    const HostTensor weight = act_tensor(test::random_normal(N * K, 51), {N, K});
    const HostTensor inp = act_tensor(test::random_normal(M * K, 52), {M, K});
    const std::vector<double> dinp_ref = f64_matmul_backward_input(dout.values(), weight.values(), M, K, N);

    HostTensor dinp(act(), {M, K});
    backend->matmul_backward_input(dinp.view(), dout.view(), weight.view(), false);
    expect_close(dinp, dinp_ref, "dinp");

    HostTensor accumulated = act_tensor(test::random_normal(M * K, 53), {M, K});
    std::vector<double> accumulated_ref = accumulated.values();
    for (size_t i = 0; i < accumulated_ref.size(); ++i) accumulated_ref[i] += dinp_ref[i];
    backend->matmul_backward_input(accumulated.view(), dout.view(), weight.view(), true);
    expect_close(accumulated, accumulated_ref, "dinp accumulated");

    HostTensor dweight(test::random_normal(N * K, 54), DType::f32, {N, K});
    HostTensor dbias(test::random_normal(N, 55), DType::f32, {N});
    std::vector<double> dweight_ref = dweight.values(), dbias_ref = dbias.values();
    const F64MatmulWeightGradient ref = f64_matmul_backward_weight(dout.values(), inp.values(), M, K, N);
    for (size_t i = 0; i < dweight_ref.size(); ++i) dweight_ref[i] += ref.dweight[i];
    for (size_t i = 0; i < dbias_ref.size(); ++i) dbias_ref[i] += ref.dbias[i];
    backend->matmul_backward_weight(dweight.view(), dbias.view(), dout.view(), inp.view());
    expect_close(dweight, dweight_ref, "dweight");
    expect_close(dbias, dbias_ref, "dbias");
}

TEST_P(CpuLayers, GeluForwardAndBackward) {
    const int M = 5, N = 40;
    const HostTensor inp = act_tensor(test::random_normal(M * N, 60, 2.0), {M, N});
    HostTensor out(act(), {M, N});
    backend->gelu_forward(out.view(), inp.view());
    expect_close(out, f64_gelu_forward(inp.values()), "out");

    HostTensor dout = act_tensor(test::random_normal(M * N, 61), {M, N});
    const std::vector<double> ref = f64_gelu_backward(dout.values(), inp.values());
    HostTensor dinp(act(), {M, N});
    backend->gelu_backward(dinp.view(), dout.view(), inp.view());
    expect_close(dinp, ref, "dinp");
    backend->gelu_backward(dout.view(), dout.view(), inp.view());  // in place: dinp aliases dout
    EXPECT_EQ(dout.values(), dinp.values());
}

TEST_P(CpuLayers, Relu2ForwardAndBackward) {
    const int M = 5, N = 40;
    const HostTensor inp = act_tensor(test::random_normal(M * N, 62, 2.0), {M, N});
    HostTensor out(act(), {M, N});
    backend->relu2_forward(out.view(), inp.view());
    expect_close(out, f64_relu2_forward(inp.values()), "out");

    HostTensor dout = act_tensor(test::random_normal(M * N, 63), {M, N});
    const std::vector<double> ref = f64_relu2_backward(dout.values(), inp.values());
    HostTensor dinp(act(), {M, N});
    backend->relu2_backward(dinp.view(), dout.view(), inp.view());
    expect_close(dinp, ref, "dinp");
    backend->relu2_backward(dout.view(), dout.view(), inp.view());  // in place: dinp aliases dout
    EXPECT_EQ(dout.values(), dinp.values());
}

// QK-norm in place on packed qkv rows: 4 query and 2 key heads normalised, the 2 value heads
// untouched bit for bit; the backward from the normalised heads against the float64 gradient of
// the rows before the norm.
TEST_P(CpuLayers, QkNormForwardAndBackward) {
    const int B = 2, T = 3, H = 4, Hkv = 2, hd = 8, width = (H + 2 * Hkv) * hd, N = B * T;
    const float epsilon = 1e-5f;
    const HostTensor inp = act_tensor(test::random_normal(N * width, 64, 3.0), {B, T, width});
    HostTensor qkv = act_tensor(inp.values(), {B, T, width}), rstd(DType::f32, {B, T, H + Hkv});
    backend->qk_norm_forward(qkv.view(), rstd.view(), H, Hkv, epsilon);
    const F64QkNormForward ref = f64_qk_norm_forward(inp.values(), N, H, Hkv, hd, epsilon);
    expect_close(qkv, ref.qkv, "qkv");
    expect_close(rstd, ref.rstd, "rstd");
    for (int n = 0; n < N; ++n)
        for (int i = (H + Hkv) * hd; i < width; ++i)
            ASSERT_EQ(qkv.values()[n * width + i], inp.values()[n * width + i]) << "value column " << i;

    HostTensor dqkv = act_tensor(test::random_normal(N * width, 65), {B, T, width});
    const std::vector<double> dref = f64_qk_norm_backward(dqkv.values(), inp.values(), N, H, Hkv, hd, epsilon);
    const std::vector<double> dvalues = dqkv.values();
    backend->qk_norm_backward(dqkv.view(), qkv.view(), rstd.view(), H, Hkv);
    expect_close(dqkv, dref, "dqkv");
    for (int n = 0; n < N; ++n)
        for (int i = (H + Hkv) * hd; i < width; ++i)
            ASSERT_EQ(dqkv.values()[n * width + i], dvalues[n * width + i]) << "value gradient column " << i;
}

TEST_P(CpuLayers, ShapeMismatchesThrowNamingTheArgument) {
    const HostTensor inp(act(), {4, 8}), weight(act(), {6, 9});
    HostTensor out(act(), {4, 6});
    try {
        backend->matmul_forward(out.view(), TensorView(), inp.view(), weight.view(), TensorView(),
                                MatmulEpilogue::none);
        FAIL() << "expected an Error";
    } catch (const Error& error) {
        EXPECT_NE(std::string(error.what()).find("weight"), std::string::npos) << error.what();
    }
    const HostTensor wrong_dtype(act() == DType::f32 ? DType::bf16 : DType::f32, {4, 8});
    HostTensor mean(DType::f32, {4}), rstd(DType::f32, {4});
    const HostTensor gamma(act(), {8}), beta(act(), {8});
    HostTensor normalized(act(), {4, 8});
    EXPECT_THROW(backend->layernorm_forward(normalized.view(), mean.view(), rstd.view(), wrong_dtype.view(),
                                            gamma.view(), beta.view()),
                 Error);
}

INSTANTIATE_TEST_SUITE_P(Precisions, CpuLayers,
                         ::testing::Values(Precision::fp32, Precision::bf16, Precision::fp16),
                         [](const auto& info) { return std::string(precision_name(info.param)); });

// TF32 runs round both matmul operands to 10-bit mantissas before multiplying: the error must be
// that of an exact product of TF32-rounded operands (within 2x), and far above FP32's.
TEST(CpuTf32, MatmulRoundsOperandsToTf32) {
    auto round_tf32 = [](double x) {  // 11 significant bits, ties to even
        int exponent = 0;
        const double mantissa = std::frexp(x, &exponent);
        return std::ldexp(std::nearbyint(std::ldexp(mantissa, 11)), exponent - 11);
    };
    const int M = 16, K = 64, N = 16;
    const std::vector<double> a = test::rounded(test::random_normal(M * K, 70), DType::f32);
    const std::vector<double> w = test::rounded(test::random_normal(N * K, 71), DType::f32);
    std::vector<double> a_tf32(a.size()), w_tf32(w.size());
    for (size_t i = 0; i < a.size(); ++i) a_tf32[i] = round_tf32(a[i]);
    for (size_t i = 0; i < w.size(); ++i) w_tf32[i] = round_tf32(w[i]);
    const std::vector<double> exact = f64_matmul_forward(a, w, {}, M, K, N, false).out;
    const double tf32_error =
        relative_norm_error(f64_matmul_forward(a_tf32, w_tf32, {}, M, K, N, false).out, exact);

    auto backend = make_backend({"cpu", 0, Precision::tf32, 0});
    const HostTensor inp(a, DType::f32, {M, K}), weight(w, DType::f32, {N, K});
    HostTensor out(DType::f32, {M, N});
    backend->matmul_forward(out.view(), TensorView(), inp.view(), weight.view(), TensorView(),
                            MatmulEpilogue::none);
    const double error = relative_norm_error(out.values(), exact);
    EXPECT_LE(error, 2.0 * tf32_error);
    EXPECT_GE(error, 0.5 * tf32_error);
    EXPECT_GT(tf32_error, test::kFp32Tolerance);  // TF32 is far less exact than FP32
}

}  // namespace
}  // namespace mixgpt
