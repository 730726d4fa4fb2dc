// CUDA RMSNorm (plain, with the residual add, backward) and SwiGLU (forward, backward) against the
// CPU backend, per precision, by the rule of gpu_test_support.h. Widths that allow the 16-byte
// vector paths and widths that do not; outputs that ops overwrite start as NaN.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinTensor;
using test::random_normal;

std::vector<double> plus(std::vector<double> a, const std::vector<double>& b) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    return a;
}

class GpuRmsNormSwiGlu : public gpu_test::GpuPrecisionTest {};

// Inputs of std 0.01 (mean square 1e-4), so that eps = 1e-5 changes rstd by 5%.
TEST_P(GpuRmsNormSwiGlu, RmsNormForward) {
    const int N = 37;
    const float epsilon = 1e-5f;
    for (int C : {48, 21}) {
        SCOPED_TRACE("C = " + std::to_string(C));
        const TwinTensor inp = act_tensor(random_normal(N * C, seed(10), 0.01), {N, C});
        const TwinTensor weight = act_tensor(random_normal(C, seed(11)), {C});
        const TwinTensor out = poisoned(act(), {N, C}), rstd = poisoned(DType::f32, {N});
        cpu->rmsnorm_forward(out.cpu(), rstd.cpu(), inp.cpu(), weight.cpu(), epsilon);
        gpu->rmsnorm_forward(out.gpu(), rstd.gpu(), inp.gpu(), weight.gpu(), epsilon);
        const F64RmsNormForward ref =
            f64_rmsnorm_forward(inp.cpu_values(), weight.cpu_values(), N, C, epsilon);
        expect_close(out, ref.out, "out");
        expect_close(rstd, ref.rstd, "rstd");
    }
}

TEST_P(GpuRmsNormSwiGlu, ResidualRmsNormForward) {
    const int N = 37;
    const float epsilon = 1e-5f;
    for (int C : {48, 21}) {
        SCOPED_TRACE("C = " + std::to_string(C));
        const TwinTensor residual_in = act_tensor(random_normal(N * C, seed(20)), {N, C});
        const TwinTensor branch = act_tensor(random_normal(N * C, seed(21)), {N, C});
        const TwinTensor weight = act_tensor(random_normal(C, seed(22)), {C});
        const TwinTensor residual_out = poisoned(act(), {N, C}), out = poisoned(act(), {N, C}),
                         rstd = poisoned(DType::f32, {N});
        cpu->residual_rmsnorm_forward(residual_out.cpu(), out.cpu(), rstd.cpu(), residual_in.cpu(),
                                      branch.cpu(), weight.cpu(), epsilon);
        gpu->residual_rmsnorm_forward(residual_out.gpu(), out.gpu(), rstd.gpu(), residual_in.gpu(),
                                      branch.gpu(), weight.gpu(), epsilon);
        const F64ResidualRmsNormForward ref = f64_residual_rmsnorm_forward(
            residual_in.cpu_values(), branch.cpu_values(), weight.cpu_values(), N, C, epsilon);
        expect_close(residual_out, ref.residual_out, "residual_out");
        expect_close(out, ref.norm.out, "out");
        expect_close(rstd, ref.norm.rstd, "rstd");

        // Recomputation relies on rmsnorm_forward of residual_out giving these bits.
        const TwinTensor again = poisoned(act(), {N, C}), rstd_again = poisoned(DType::f32, {N});
        gpu->rmsnorm_forward(again.gpu(), rstd_again.gpu(), residual_out.gpu(), weight.gpu(), epsilon);
        EXPECT_EQ(again.gpu_values(), out.gpu_values()) << "out recomputed";
        EXPECT_EQ(rstd_again.gpu_values(), rstd.gpu_values()) << "rstd recomputed";
    }
}

TEST_P(GpuRmsNormSwiGlu, RmsNormBackward) {
    // 300 rows: dweight is summed over several blocks' partials. C = 520: two whole passes of a
    // warp over a row of 16-bit values (256 columns each) and a part of one.
    const int N = 300;
    const float epsilon = 1e-5f;
    for (int C : {48, 21, 520}) {
        SCOPED_TRACE("C = " + std::to_string(C));
        const TwinTensor inp = act_tensor(random_normal(N * C, seed(30), 2.0), {N, C});
        const TwinTensor weight = act_tensor(random_normal(C, seed(31)), {C});
        const TwinTensor dout = act_tensor(random_normal(N * C, seed(32)), {N, C});
        const F64RmsNormForward stats =
            f64_rmsnorm_forward(inp.cpu_values(), std::vector<double>(C, 1.0), N, C, epsilon);
        const TwinTensor rstd = f32_tensor(stats.rstd, {N});
        const TwinTensor dinp = act_tensor(random_normal(N * C, seed(33)), {N, C});
        const TwinTensor dweight = f32_tensor(random_normal(C, seed(34)), {C});
        const std::vector<double> dinp0 = dinp.cpu_values(), dweight0 = dweight.cpu_values();
        cpu->rmsnorm_backward(dinp.cpu(), dweight.cpu(), dout.cpu(), inp.cpu(), weight.cpu(), rstd.cpu());
        gpu->rmsnorm_backward(dinp.gpu(), dweight.gpu(), dout.gpu(), inp.gpu(), weight.gpu(), rstd.gpu());
        const F64RmsNormBackward ref =
            f64_rmsnorm_backward(dout.cpu_values(), inp.cpu_values(), weight.cpu_values(), N, C, epsilon);
        expect_close(dinp, plus(dinp0, ref.dinp), "dinp");
        expect_close(dweight, plus(dweight0, ref.dweight), "dweight");
    }
}

TEST_P(GpuRmsNormSwiGlu, SwiGluForwardAndBackward) {
    const int M = 37;
    // F = 40: rows of 16-byte packs; F = 21: element by element.
    for (int F : {40, 21}) {
        SCOPED_TRACE("F = " + std::to_string(F));
        const TwinTensor gate_up = act_tensor(random_normal(M * 2 * F, seed(40), 3.0), {M, 2 * F});
        const TwinTensor out = poisoned(act(), {M, F});
        cpu->swiglu_forward(out.cpu(), gate_up.cpu());
        gpu->swiglu_forward(out.gpu(), gate_up.gpu());
        expect_close(out, f64_swiglu_forward(gate_up.cpu_values(), M, F), "out");
        const TwinTensor again = poisoned(act(), {M, F});  // a recomputation from the stored product
        gpu->swiglu_forward(again.gpu(), gate_up.gpu());
        EXPECT_EQ(again.gpu_values(), out.gpu_values()) << "out recomputed";

        const TwinTensor dout = act_tensor(random_normal(M * F, seed(41)), {M, F});
        const TwinTensor dgate_up = poisoned(act(), {M, 2 * F});
        cpu->swiglu_backward(dgate_up.cpu(), dout.cpu(), gate_up.cpu());
        gpu->swiglu_backward(dgate_up.gpu(), dout.gpu(), gate_up.gpu());
        expect_close(dgate_up, f64_swiglu_backward(dout.cpu_values(), gate_up.cpu_values(), M, F),
                     "dgate_up");
    }
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuRmsNormSwiGlu,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
