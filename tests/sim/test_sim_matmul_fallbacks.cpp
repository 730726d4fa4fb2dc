// The matmul ops (kernels/cuda/matmul.cu) when the simulated cuBLASLt offers no algorithm for
// their products as asked (tests/cuda_sim/cublaslt_refusals.h): each takes a fallback route
// (kernels/cuda/cublaslt_fallback.h), says so once in a warning, and its result is judged against
// the CPU backend as tests/gpu/test_gpu_layers.cpp judges the op (gpu_test_support.h's rule):
//   - the bias epilogue refused: fp32 output, the bias added by a kernel (matmul_forward);
//   - 16-bit outputs refused: fp32 output, rounded by a kernel (matmul_forward, the input
//     gradient overwriting and accumulating);
//   - bf16, fp16 operands and TF32 compute refused: operands widened to fp32, fp32 compute (all
//     three ops, the weight gradient's fp32 output included);
//   - everything refused: each op fails with one line naming its product's types and shape.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cuda_sim/cublaslt_refusals.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinTensor;
using test::random_normal;

constexpr int M = 37, K = 24, N = 40;

std::vector<double> plus(std::vector<double> a, const std::vector<double>& b) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    return a;
}

class SimMatmulFallbacks : public gpu_test::GpuPrecisionTest {
protected:
    // Every epilogue of matmul_forward, the input gradient (overwriting, accumulating) and the
    // weight gradient, each against the CPU. Returns what the ops wrote to stderr.
    std::string expect_every_matmul_op_matches_the_cpu() {
        const TwinTensor inp = act_tensor(random_normal(M * K, seed(1)), {M, K});
        const TwinTensor weight = act_tensor(random_normal(N * K, seed(2), 0.3), {N, K});
        const TwinTensor bias = act_tensor(random_normal(N, seed(3), 0.5), {N});
        const TwinTensor dout = act_tensor(random_normal(M * N, seed(4)), {M, N});
        test::CapturedStderr log;
        for (const MatmulEpilogue epilogue :
             {MatmulEpilogue::none, MatmulEpilogue::bias, MatmulEpilogue::bias_gelu}) {
            const bool with_bias = epilogue != MatmulEpilogue::none,
                       with_gelu = epilogue == MatmulEpilogue::bias_gelu;
            SCOPED_TRACE(with_gelu ? "bias and gelu" : with_bias ? "bias" : "no epilogue");
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
            if (with_gelu) expect_close(pre_gelu, ref.pre_gelu, "pre_gelu");
        }

        const std::vector<double> dinp_ref =
            f64_matmul_backward_input(dout.cpu_values(), weight.cpu_values(), M, K, N);
        const TwinTensor overwritten = poisoned(act(), {M, K});
        cpu->matmul_backward_input(overwritten.cpu(), dout.cpu(), weight.cpu(), false);
        gpu->matmul_backward_input(overwritten.gpu(), dout.gpu(), weight.gpu(), false);
        expect_close(overwritten, dinp_ref, "dinp (overwritten)");
        const TwinTensor accumulated = act_tensor(random_normal(M * K, seed(5)), {M, K});
        const std::vector<double> start = accumulated.cpu_values();
        cpu->matmul_backward_input(accumulated.cpu(), dout.cpu(), weight.cpu(), true);
        gpu->matmul_backward_input(accumulated.gpu(), dout.gpu(), weight.gpu(), true);
        expect_close(accumulated, plus(start, dinp_ref), "dinp (accumulated)");

        const F64MatmulWeightGradient ref =
            f64_matmul_backward_weight(dout.cpu_values(), inp.cpu_values(), M, K, N);
        const TwinTensor dweight = f32_tensor(random_normal(N * K, seed(6)), {N, K});
        const std::vector<double> dweight0 = dweight.cpu_values();
        cpu->matmul_backward_weight(dweight.cpu(), TensorView(), dout.cpu(), inp.cpu());
        gpu->matmul_backward_weight(dweight.gpu(), TensorView(), dout.gpu(), inp.gpu());
        expect_close(dweight, plus(dweight0, ref.dweight), "dweight");
        return log.take();
    }

    bool sixteen_bit() const { return act() != DType::f32; }
    // The name of the operands' type in cuBLASLt's terms (what the messages say).
    std::string operands() const { return GetParam() == Precision::tf32 ? "tf32" : dtype_name(act()); }
};

size_t count(const std::string& text, const std::string& part) {
    size_t found = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++found;
    return found;
}

TEST_P(SimMatmulFallbacks, BiasEpilogueRefused) {
    const cuda_sim::CublasLtRefusal refusal("bias");
    const std::string log = expect_every_matmul_op_matches_the_cpu();
    // Once per product: the bias and bias-GELU forwards are one product (the GELU is a kernel).
    EXPECT_EQ(count(log, "cuda matmul_forward: cuBLASLt offers no algorithm for " + operands() + " x " +
                             operands() + " -> " + dtype_name(act()) +
                             " with bias, m=40 n=37 k=24 (op TN, ld 24/24/40); computing it with fp32 output "
                             "with the epilogue in a kernel"),
              1u)
        << log;
    EXPECT_EQ(count(log, "offers no algorithm"), 1u) << log;
}

TEST_P(SimMatmulFallbacks, SixteenBitOutputsRefused) {
    const cuda_sim::CublasLtRefusal refusal("d=bf16;d=f16");
    const std::string log = expect_every_matmul_op_matches_the_cpu();
    // bf16, fp16: the forward with and without bias, the input gradient overwriting and accumulating.
    EXPECT_EQ(count(log, "computing it with fp32 output with the epilogue in a kernel"),
              sixteen_bit() ? 4u : 0u)
        << log;
    EXPECT_EQ(count(log, "offers no algorithm"), sixteen_bit() ? 4u : 0u) << log;
}

TEST_P(SimMatmulFallbacks, TensorCoreOperandsRefused) {
    const cuda_sim::CublasLtRefusal refusal("a=bf16;a=f16;tf32");
    const std::string log = expect_every_matmul_op_matches_the_cpu();
    // Every product but fp32's: the forward with and without bias, the input gradient twice, the
    // weight gradient.
    const bool refused = GetParam() != Precision::fp32;
    const std::string route =
        GetParam() == Precision::tf32 ? "fp32 compute instead of tf32" : "operands widened to fp32";
    EXPECT_EQ(count(log, "computing it with " + route), refused ? 5u : 0u) << log;
    EXPECT_EQ(
        count(log, "cuda matmul_backward_weight: cuBLASLt offers no algorithm for " + operands() + " x " +
                       operands() + " -> fp32, accumulating, m=24 n=40 k=37 (op NT, ld 24/40/24)"),
        refused ? 1u : 0u)
        << log;
}

// With no algorithm on any route, each op throws one line naming its product and the routes tried.
TEST_P(SimMatmulFallbacks, NothingOfferedIsOneLineNamingTheProduct) {
    const cuda_sim::CublasLtRefusal refusal("all");
    const TwinTensor inp = act_tensor(random_normal(M * K, seed(1)), {M, K});
    const TwinTensor weight = act_tensor(random_normal(N * K, seed(2), 0.3), {N, K});
    const TwinTensor bias = act_tensor(random_normal(N, seed(3), 0.5), {N});
    const TwinTensor out = poisoned(act(), {M, N}), dinp = poisoned(act(), {M, K});
    const TwinTensor dweight = f32_tensor(random_normal(N * K, seed(6)), {N, K});
    const std::string widened = GetParam() == Precision::tf32 ? " or with fp32 compute instead of tf32"
                                : sixteen_bit()               ? " or with operands widened to fp32"
                                                              : "";
    const std::string output = dtype_name(act());
    const std::string none = operands() + " x " + operands() + " -> ";
    EXPECT_EQ(test::error_of([&] {
                  gpu->matmul_forward(out.gpu(), TensorView(), inp.gpu(), weight.gpu(), bias.gpu(),
                                      MatmulEpilogue::bias);
              }),
              "cuda matmul_forward: cuBLASLt offers no algorithm for " + none + output +
                  " with bias, m=40 n=37 k=24 (op TN, ld 24/24/40), nor with fp32 output with the epilogue "
                  "in a kernel" +
                  widened);
    EXPECT_EQ(test::error_of([&] { gpu->matmul_backward_input(dinp.gpu(), out.gpu(), weight.gpu(), true); }),
              "cuda matmul_backward_input: cuBLASLt offers no algorithm for " + none + output +
                  ", accumulating, m=24 n=37 k=40 (op NN, ld 24/40/24)" +
                  (sixteen_bit()     ? ", nor with fp32 output with the epilogue in a kernel" + widened
                   : widened.empty() ? ""
                                     : ", nor with fp32 compute instead of tf32"));
    EXPECT_EQ(test::error_of(
                  [&] { gpu->matmul_backward_weight(dweight.gpu(), TensorView(), out.gpu(), inp.gpu()); }),
              "cuda matmul_backward_weight: cuBLASLt offers no algorithm for " + none +
                  "fp32, accumulating, m=24 n=40 k=37 (op NT, ld 24/40/24)" +
                  (widened.empty() ? "" : ", nor with " + widened.substr(9)));
}

INSTANTIATE_TEST_SUITE_P(SimPrecisions, SimMatmulFallbacks,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
