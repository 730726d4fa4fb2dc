// CUDA backend against the CPU backend, per precision: embedding, LayerNorm (plain,
// with residual, backward), matmul (bias and GELU, an unaligned bias, both backward forms), GELU,
// ReLU², QK-norm.
// Inputs are fresh random values each run; outputs that ops overwrite start as NaN.
// Shapes include widths that allow the 16-byte vector paths and widths that do not.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinIndices;
using gpu_test::TwinTensor;
using test::random_normal;

std::vector<double> plus(std::vector<double> a, const std::vector<double>& b) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    return a;
}

class GpuLayers : public gpu_test::GpuPrecisionTest {};

// Rows t, and positions within documents (--positions document): documents of 1 to 5 tokens, so
// the position-keyed backward sees long runs of each position.
TEST_P(GpuLayers, EmbeddingForwardAndBackward) {
    const int B = 3, T = 13, Vp = 128, maxT = 16;
    std::vector<int32_t> places;  // (B,T): documents of 1, 2, 3, 4, 5, 1, ... tokens in each row
    for (int b = 0; b < B; ++b)
        for (int t = 0, length = 1, place = 0; t < T; ++t) {
            places.push_back(place);
            if (++place == length) {
                place = 0;
                length = length % 5 + 1;
            }
        }
    for (const bool documents : {false, true})
        for (int C : {24, 20}) {
            SCOPED_TRACE("C = " + std::to_string(C) + (documents ? ", document positions" : ""));
            const std::vector<int> place_values =
                documents ? std::vector<int>(places.begin(), places.end()) : std::vector<int>();
            const TwinIndices positions(*cpu, *gpu, places, {B, T});
            const auto position_view = [&](bool on_gpu) {
                return documents ? (on_gpu ? positions.gpu() : positions.cpu()) : TensorView();
            };
            // Tokens from a small range, so the backward sees many repeats of each.
            const TwinIndices tokens(*cpu, *gpu, test::random_tokens(B * T, 20, seed(1)), {B, T});
            const TwinTensor wte = act_tensor(random_normal(Vp * C, seed(2)), {Vp, C});
            const TwinTensor wpe = act_tensor(random_normal(maxT * C, seed(3)), {maxT, C});
            const TwinTensor out = poisoned(act(), {B, T, C});
            cpu->embedding_forward(out.cpu(), tokens.cpu(), wte.cpu(), wpe.cpu(), position_view(false));
            gpu->embedding_forward(out.gpu(), tokens.gpu(), wte.gpu(), wpe.gpu(), position_view(true));
            expect_close(out,
                         f64_embedding_forward(tokens.values(), wte.cpu_values(), wpe.cpu_values(), B, T, C,
                                               place_values),
                         "out");

            const TwinTensor dout = act_tensor(random_normal(B * T * C, seed(4)), {B, T, C});
            const TwinTensor dwte = f32_tensor(random_normal(Vp * C, seed(5)), {Vp, C});
            const TwinTensor dwpe = f32_tensor(random_normal(maxT * C, seed(6)), {maxT, C});
            std::vector<double> dwte_ref = dwte.cpu_values(), dwpe_ref = dwpe.cpu_values();
            cpu->embedding_backward(dwte.cpu(), dwpe.cpu(), dout.cpu(), tokens.cpu(), position_view(false));
            gpu->embedding_backward(dwte.gpu(), dwpe.gpu(), dout.gpu(), tokens.gpu(), position_view(true));
            f64_embedding_backward(dwte_ref, dwpe_ref, dout.cpu_values(), tokens.values(), B, T, C, place_values);
            expect_close(dwte, dwte_ref, "dwte");
            expect_close(dwpe, dwpe_ref, "dwpe");
        }
}

TEST_P(GpuLayers, LayerNormForward) {
    const int N = 37;
    for (int C : {48, 21}) {
        SCOPED_TRACE("C = " + std::to_string(C));
        std::vector<double> x = random_normal(N * C, seed(10), 3.0);
        for (double& value : x) value += 1.5;  // a mean away from zero
        const TwinTensor inp = act_tensor(x, {N, C});
        const TwinTensor weight = act_tensor(random_normal(C, seed(11)), {C});
        const TwinTensor bias = act_tensor(random_normal(C, seed(12)), {C});
        const TwinTensor out = poisoned(act(), {N, C}), mean = poisoned(DType::f32, {N}),
                         rstd = poisoned(DType::f32, {N});
        cpu->layernorm_forward(out.cpu(), mean.cpu(), rstd.cpu(), inp.cpu(), weight.cpu(), bias.cpu());
        gpu->layernorm_forward(out.gpu(), mean.gpu(), rstd.gpu(), inp.gpu(), weight.gpu(), bias.gpu());
        const F64LayerNormForward ref =
            f64_layernorm_forward(inp.cpu_values(), weight.cpu_values(), bias.cpu_values(), N, C);
        expect_close(out, ref.out, "out");
        expect_close(mean, ref.mean, "mean");
        expect_close(rstd, ref.rstd, "rstd");
    }
}

TEST_P(GpuLayers, ResidualLayerNormForward) {
    const int N = 37;
    for (int C : {48, 21}) {
        SCOPED_TRACE("C = " + std::to_string(C));
        const TwinTensor residual_in = act_tensor(random_normal(N * C, seed(20)), {N, C});
        const TwinTensor branch = act_tensor(random_normal(N * C, seed(21)), {N, C});
        const TwinTensor weight = act_tensor(random_normal(C, seed(22)), {C});
        const TwinTensor bias = act_tensor(random_normal(C, seed(23)), {C});
        const TwinTensor residual_out = poisoned(act(), {N, C}), out = poisoned(act(), {N, C}),
                         mean = poisoned(DType::f32, {N}), rstd = poisoned(DType::f32, {N});
        cpu->residual_layernorm_forward(residual_out.cpu(), out.cpu(), mean.cpu(), rstd.cpu(),
                                        residual_in.cpu(), branch.cpu(), weight.cpu(), bias.cpu());
        gpu->residual_layernorm_forward(residual_out.gpu(), out.gpu(), mean.gpu(), rstd.gpu(),
                                        residual_in.gpu(), branch.gpu(), weight.gpu(), bias.gpu());
        const F64ResidualLayerNormForward ref = f64_residual_layernorm_forward(
            residual_in.cpu_values(), branch.cpu_values(), weight.cpu_values(), bias.cpu_values(), N, C);
        expect_close(residual_out, ref.residual_out, "residual_out");
        expect_close(out, ref.norm.out, "out");
        expect_close(mean, ref.norm.mean, "mean");
        expect_close(rstd, ref.norm.rstd, "rstd");

        // Recomputation (model/README.md) relies on layernorm_forward of residual_out giving these bits.
        const TwinTensor again = poisoned(act(), {N, C}), mean_again = poisoned(DType::f32, {N}),
                         rstd_again = poisoned(DType::f32, {N});
        gpu->layernorm_forward(again.gpu(), mean_again.gpu(), rstd_again.gpu(), residual_out.gpu(),
                               weight.gpu(), bias.gpu());
        EXPECT_EQ(again.gpu_values(), out.gpu_values()) << "out recomputed";
        EXPECT_EQ(mean_again.gpu_values(), mean.gpu_values()) << "mean recomputed";
        EXPECT_EQ(rstd_again.gpu_values(), rstd.gpu_values()) << "rstd recomputed";
    }
}

TEST_P(GpuLayers, LayerNormBackward) {
    // 300 rows: the parameter gradients are summed over several blocks' partials. C = 520: two
    // whole passes of a warp over a row of 16-bit values (256 columns each) and a part of one.
    const int N = 300;
    for (int C : {48, 21, 520}) {
        SCOPED_TRACE("C = " + std::to_string(C));
        const TwinTensor inp = act_tensor(random_normal(N * C, seed(30), 2.0), {N, C});
        const TwinTensor weight = act_tensor(random_normal(C, seed(31)), {C});
        const TwinTensor dout = act_tensor(random_normal(N * C, seed(32)), {N, C});
        const F64LayerNormForward stats = f64_layernorm_forward(inp.cpu_values(), std::vector<double>(C, 1.0),
                                                                std::vector<double>(C, 0.0), N, C);
        const TwinTensor mean = f32_tensor(stats.mean, {N}), rstd = f32_tensor(stats.rstd, {N});
        const TwinTensor dinp = act_tensor(random_normal(N * C, seed(33)), {N, C});
        const TwinTensor dweight = f32_tensor(random_normal(C, seed(34)), {C});
        const TwinTensor dbias = f32_tensor(random_normal(C, seed(35)), {C});
        const std::vector<double> dinp0 = dinp.cpu_values(), dweight0 = dweight.cpu_values(),
                                  dbias0 = dbias.cpu_values();
        cpu->layernorm_backward(dinp.cpu(), dweight.cpu(), dbias.cpu(), dout.cpu(), inp.cpu(), weight.cpu(),
                                mean.cpu(), rstd.cpu());
        gpu->layernorm_backward(dinp.gpu(), dweight.gpu(), dbias.gpu(), dout.gpu(), inp.gpu(), weight.gpu(),
                                mean.gpu(), rstd.gpu());
        const F64LayerNormBackward ref =
            f64_layernorm_backward(dout.cpu_values(), inp.cpu_values(), weight.cpu_values(), N, C);
        expect_close(dinp, plus(dinp0, ref.dinp), "dinp");
        expect_close(dweight, plus(dweight0, ref.dweight), "dweight");
        expect_close(dbias, plus(dbias0, ref.dbias), "dbias");
    }
}

TEST_P(GpuLayers, MatmulForwardWithEveryEpilogue) {
    const int M = 37, K = 24;
    // N = 20: rows of 16-bit outputs are not 16-byte aligned.
    for (int N : {40, 20})
        for (const MatmulEpilogue epilogue :
             {MatmulEpilogue::none, MatmulEpilogue::bias, MatmulEpilogue::bias_gelu}) {
            const bool with_bias = epilogue != MatmulEpilogue::none;
            const bool with_gelu = epilogue == MatmulEpilogue::bias_gelu;
            SCOPED_TRACE("N = " + std::to_string(N) + (with_bias ? ", bias" : "") +
                         (with_gelu ? ", gelu" : ""));
            const TwinTensor inp = act_tensor(random_normal(M * K, seed(40)), {M, K});
            const TwinTensor weight = act_tensor(random_normal(N * K, seed(41), 0.3), {N, K});
            const TwinTensor bias = act_tensor(random_normal(N, seed(42), 0.5), {N});
            const TwinTensor out = poisoned(act(), {M, N}), pre_gelu = poisoned(act(), {M, N});
            const TensorView none;
            cpu->matmul_forward(out.cpu(), with_gelu ? pre_gelu.cpu() : none, inp.cpu(), weight.cpu(),
                                with_bias ? bias.cpu() : none, epilogue);
            gpu->matmul_forward(out.gpu(), with_gelu ? pre_gelu.gpu() : none, inp.gpu(), weight.gpu(),
                                with_bias ? bias.gpu() : none, epilogue);
            const F64MatmulForward ref =
                f64_matmul_forward(inp.cpu_values(), weight.cpu_values(),
                                   with_bias ? bias.cpu_values() : std::vector<double>(), M, K, N, with_gelu);
            expect_close(out, ref.out, "out");
            if (!with_gelu) continue;
            expect_close(pre_gelu, ref.pre_gelu, "pre_gelu");
            // Recomputation (model/README.md) relies on gelu_forward(pre_gelu) giving out's bits.
            const TwinTensor again = poisoned(act(), {M, N});
            gpu->gelu_forward(again.gpu(), pre_gelu.gpu());
            EXPECT_EQ(again.gpu_values(), out.gpu_values()) << "out recomputed from pre_gelu";
        }
}

// A bias viewed one element into its buffer (not 16-byte aligned), with and without GELU.
TEST_P(GpuLayers, MatmulForwardWithAnUnalignedBias) {
    const int M = 37, K = 24, N = 40;
    const TwinTensor inp = act_tensor(random_normal(M * K, seed(45)), {M, K});
    const TwinTensor weight = act_tensor(random_normal(N * K, seed(46), 0.3), {N, K});
    const TwinTensor bias_buffer = act_tensor(random_normal(N + 1, seed(47), 0.5), {N + 1});
    const auto view_at_one = [&](const TensorView& buffer) {
        return TensorView(static_cast<char*>(buffer.data) + dtype_size(act()), act(), {N});
    };
    const std::vector<double> buffer_values = bias_buffer.cpu_values();
    const std::vector<double> bias_values(buffer_values.begin() + 1, buffer_values.end());
    for (bool with_gelu : {false, true}) {
        SCOPED_TRACE(with_gelu ? "gelu" : "no gelu");
        const TwinTensor out = poisoned(act(), {M, N}), pre_gelu = poisoned(act(), {M, N});
        const MatmulEpilogue epilogue = with_gelu ? MatmulEpilogue::bias_gelu : MatmulEpilogue::bias;
        cpu->matmul_forward(out.cpu(), with_gelu ? pre_gelu.cpu() : TensorView(), inp.cpu(), weight.cpu(),
                            view_at_one(bias_buffer.cpu()), epilogue);
        gpu->matmul_forward(out.gpu(), with_gelu ? pre_gelu.gpu() : TensorView(), inp.gpu(), weight.gpu(),
                            view_at_one(bias_buffer.gpu()), epilogue);
        const F64MatmulForward ref =
            f64_matmul_forward(inp.cpu_values(), weight.cpu_values(), bias_values, M, K, N, with_gelu);
        expect_close(out, ref.out, "out");
        if (with_gelu) expect_close(pre_gelu, ref.pre_gelu, "pre_gelu");
    }
}

TEST_P(GpuLayers, MatmulBackwardInput) {
    const int M = 37, K = 24, N = 40;
    const TwinTensor dout = act_tensor(random_normal(M * N, seed(50)), {M, N});
    const TwinTensor weight = act_tensor(random_normal(N * K, seed(51), 0.3), {N, K});
    const std::vector<double> product =
        f64_matmul_backward_input(dout.cpu_values(), weight.cpu_values(), M, K, N);

    const TwinTensor overwritten = poisoned(act(), {M, K});
    cpu->matmul_backward_input(overwritten.cpu(), dout.cpu(), weight.cpu(), false);
    gpu->matmul_backward_input(overwritten.gpu(), dout.gpu(), weight.gpu(), false);
    expect_close(overwritten, product, "dinp (overwritten)");

    const TwinTensor accumulated = act_tensor(random_normal(M * K, seed(52)), {M, K});
    const std::vector<double> start = accumulated.cpu_values();
    cpu->matmul_backward_input(accumulated.cpu(), dout.cpu(), weight.cpu(), true);
    gpu->matmul_backward_input(accumulated.gpu(), dout.gpu(), weight.gpu(), true);
    expect_close(accumulated, plus(start, product), "dinp (accumulated)");
}

TEST_P(GpuLayers, MatmulBackwardWeightAccumulates) {
    // 600 rows: the bias gradient is summed over two row chunks.
    const int M = 600, K = 24, N = 40;
    const TwinTensor dout = act_tensor(random_normal(M * N, seed(60)), {M, N});
    const TwinTensor inp = act_tensor(random_normal(M * K, seed(61)), {M, K});
    const F64MatmulWeightGradient ref =
        f64_matmul_backward_weight(dout.cpu_values(), inp.cpu_values(), M, K, N);
    for (bool with_bias : {true, false}) {
        SCOPED_TRACE(with_bias ? "with dbias" : "without dbias");
        const TwinTensor dweight = f32_tensor(random_normal(N * K, seed(62)), {N, K});
        const TwinTensor dbias = f32_tensor(random_normal(N, seed(63)), {N});
        const std::vector<double> dweight0 = dweight.cpu_values(), dbias0 = dbias.cpu_values();
        cpu->matmul_backward_weight(dweight.cpu(), with_bias ? dbias.cpu() : TensorView(), dout.cpu(),
                                    inp.cpu());
        gpu->matmul_backward_weight(dweight.gpu(), with_bias ? dbias.gpu() : TensorView(), dout.gpu(),
                                    inp.gpu());
        expect_close(dweight, plus(dweight0, ref.dweight), "dweight");
        if (with_bias)
            expect_close(dbias, plus(dbias0, ref.dbias), "dbias");
        else
            EXPECT_EQ(dbias.gpu_values(), dbias0);
    }
}

TEST_P(GpuLayers, GeluForwardAndBackward) {
    const int M = 37, N = 40;
    const TwinTensor inp = act_tensor(random_normal(M * N, seed(70), 2.0), {M, N});
    const TwinTensor out = poisoned(act(), {M, N});
    cpu->gelu_forward(out.cpu(), inp.cpu());
    gpu->gelu_forward(out.gpu(), inp.gpu());
    expect_close(out, f64_gelu_forward(inp.cpu_values()), "out");

    const TwinTensor dout = act_tensor(random_normal(M * N, seed(71)), {M, N});
    const std::vector<double> ref = f64_gelu_backward(dout.cpu_values(), inp.cpu_values());
    const TwinTensor dinp = poisoned(act(), {M, N});
    cpu->gelu_backward(dinp.cpu(), dout.cpu(), inp.cpu());
    gpu->gelu_backward(dinp.gpu(), dout.gpu(), inp.gpu());
    expect_close(dinp, ref, "dinp");
    // In place: dinp aliases dout.
    cpu->gelu_backward(dout.cpu(), dout.cpu(), inp.cpu());
    gpu->gelu_backward(dout.gpu(), dout.gpu(), inp.gpu());
    expect_close(dout, ref, "dinp (in place)");
}

TEST_P(GpuLayers, Relu2ForwardAndBackward) {
    const int M = 37, N = 40;
    const TwinTensor inp = act_tensor(random_normal(M * N, seed(72), 2.0), {M, N});
    const TwinTensor out = poisoned(act(), {M, N});
    cpu->relu2_forward(out.cpu(), inp.cpu());
    gpu->relu2_forward(out.gpu(), inp.gpu());
    expect_close(out, f64_relu2_forward(inp.cpu_values()), "out");

    const TwinTensor dout = act_tensor(random_normal(M * N, seed(73)), {M, N});
    const std::vector<double> ref = f64_relu2_backward(dout.cpu_values(), inp.cpu_values());
    const TwinTensor dinp = poisoned(act(), {M, N});
    cpu->relu2_backward(dinp.cpu(), dout.cpu(), inp.cpu());
    gpu->relu2_backward(dinp.gpu(), dout.gpu(), inp.gpu());
    expect_close(dinp, ref, "dinp");
    // In place: dinp aliases dout.
    cpu->relu2_backward(dout.cpu(), dout.cpu(), inp.cpu());
    gpu->relu2_backward(dout.gpu(), dout.gpu(), inp.gpu());
    expect_close(dout, ref, "dinp (in place)");
}

// QK-norm in place: head widths with and without the 16-byte path, grouped key heads.
TEST_P(GpuLayers, QkNormForwardAndBackward) {
    const int B = 3, T = 5, H = 4, Hkv = 2, N = B * T;
    const float epsilon = 1e-5f;
    for (int hd : {64, 10}) {
        SCOPED_TRACE("hd = " + std::to_string(hd));
        const int width = (H + 2 * Hkv) * hd;
        const std::vector<double> inp = random_normal(N * width, seed(74), 3.0);
        const TwinTensor qkv = act_tensor(inp, {B, T, width});
        const std::vector<double> stored = qkv.cpu_values();  // inp in act
        const TwinTensor rstd = poisoned(DType::f32, {B, T, H + Hkv});
        cpu->qk_norm_forward(qkv.cpu(), rstd.cpu(), H, Hkv, epsilon);
        gpu->qk_norm_forward(qkv.gpu(), rstd.gpu(), H, Hkv, epsilon);
        const F64QkNormForward ref = f64_qk_norm_forward(stored, N, H, Hkv, hd, epsilon);
        expect_close(qkv, ref.qkv, "qkv");
        expect_close(rstd, ref.rstd, "rstd");

        const TwinTensor dqkv = act_tensor(random_normal(N * width, seed(75)), {B, T, width});
        const std::vector<double> dref = f64_qk_norm_backward(dqkv.cpu_values(), stored, N, H, Hkv, hd, epsilon);
        cpu->qk_norm_backward(dqkv.cpu(), qkv.cpu(), rstd.cpu(), H, Hkv);
        gpu->qk_norm_backward(dqkv.gpu(), qkv.gpu(), rstd.gpu(), H, Hkv);
        expect_close(dqkv, dref, "dqkv");
    }
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuLayers,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
