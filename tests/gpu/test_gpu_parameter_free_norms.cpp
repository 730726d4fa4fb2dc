// CUDA LayerNorm and RMSNorm without parameters (--norm-weights false: weight, bias and their
// gradients invalid), per precision: the GPU's forward (fused with the residual add) is bit for bit
// its own with a weight of ones and a bias of zeros, and forward and backward match the CPU's
// parameter-free outputs by the rule of gpu_test_support.h. (The backward is not held to the
// weighted one's bits: with the weight 1 folded away, the compiler fuses dy * xhat into the sums
// differently; the simulator's RMSNorm at C = 21 differs in fp32's last bits.) Widths that take the 16-byte
// paths and widths that do not; 300 rows, so the backward runs over several blocks.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64.h"
#include "tests/test_cpu_support.h"

namespace mixgpt {
namespace {

using gpu_test::TwinTensor;
using test::random_normal;

class GpuParameterFreeNorms : public gpu_test::GpuPrecisionTest {};

TEST_P(GpuParameterFreeNorms, EqualWeightsOfOnesAndMatchTheCpu) {
    const int N = 300;
    const float epsilon = 1e-5f;
    for (int C : {48, 21})
        for (bool layernorm : {true, false}) {
            SCOPED_TRACE(std::string(layernorm ? "layernorm" : "rmsnorm") + ", C = " + std::to_string(C));
            const TwinTensor inp = act_tensor(random_normal(N * C, seed(80), 2.0), {N, C});
            const TwinTensor branch = act_tensor(random_normal(N * C, seed(81)), {N, C});
            const TwinTensor dout = act_tensor(random_normal(N * C, seed(82)), {N, C});
            const std::vector<double> dinp_start = random_normal(N * C, seed(83));
            const TwinTensor ones = act_tensor(std::vector<double>(C, 1.0), {C});
            const TwinTensor zeros = act_tensor(std::vector<double>(C, 0.0), {C});
            const TwinTensor dweight = f32_tensor(std::vector<double>(C, 0.0), {C});
            const TwinTensor dbias = f32_tensor(std::vector<double>(C, 0.0), {C});
            struct Outputs {
                TwinTensor residual_out, out, mean, rstd, dinp;
            };
            // On the GPU, with or without parameters; on the CPU, without (the reference run).
            const auto run = [&](bool on_gpu, bool parameter_free) {
                Outputs o{poisoned(act(), {N, C}), poisoned(act(), {N, C}), poisoned(DType::f32, {N}),
                          poisoned(DType::f32, {N}), act_tensor(dinp_start, {N, C})};
                Backend& backend = on_gpu ? *gpu : *cpu;
                const auto view = [on_gpu](const TwinTensor& t) { return on_gpu ? t.gpu() : t.cpu(); };
                const TensorView w = parameter_free ? TensorView() : view(ones);
                const TensorView b = parameter_free ? TensorView() : view(zeros);
                const TensorView dw = parameter_free ? TensorView() : view(dweight);
                const TensorView db = parameter_free ? TensorView() : view(dbias);
                if (layernorm) {
                    backend.residual_layernorm_forward(view(o.residual_out), view(o.out), view(o.mean),
                                                       view(o.rstd), view(inp), view(branch), w, b);
                    backend.layernorm_backward(view(o.dinp), dw, db, view(dout), view(o.residual_out), w,
                                               view(o.mean), view(o.rstd));
                } else {
                    backend.residual_rmsnorm_forward(view(o.residual_out), view(o.out), view(o.rstd),
                                                     view(inp), view(branch), w, epsilon);
                    backend.rmsnorm_backward(view(o.dinp), dw, view(dout), view(o.residual_out), w,
                                             view(o.rstd));
                }
                return o;
            };
            const Outputs free = run(true, true), weighted = run(true, false);
            EXPECT_EQ(free.out.gpu_values(), weighted.out.gpu_values());
            EXPECT_EQ(free.rstd.gpu_values(), weighted.rstd.gpu_values());
            const Outputs cpu_free = run(false, true);
            const auto twin = [&](const TwinTensor& on_cpu, const TwinTensor& on_gpu) {
                return std::make_pair(on_cpu.cpu_values(), on_gpu.gpu_values());
            };
            // The float64 references of the stored sums, with a weight of ones (and a bias of zeros).
            const std::vector<double> sums = cpu_free.residual_out.cpu_values(), ones_ref(C, 1.0);
            std::vector<double> dinp_ref = dinp_start;
            std::vector<double> out_ref;
            if (layernorm) {
                out_ref = f64_layernorm_forward(sums, ones_ref, std::vector<double>(C, 0.0), N, C).out;
                const F64LayerNormBackward ref =
                    f64_layernorm_backward(dout.cpu_values(), sums, ones_ref, N, C);
                for (size_t i = 0; i < dinp_ref.size(); ++i) dinp_ref[i] += ref.dinp[i];
            } else {
                out_ref = f64_rmsnorm_forward(sums, ones_ref, N, C, epsilon).out;
                const F64RmsNormBackward ref =
                    f64_rmsnorm_backward(dout.cpu_values(), sums, ones_ref, N, C, epsilon);
                for (size_t i = 0; i < dinp_ref.size(); ++i) dinp_ref[i] += ref.dinp[i];
            }
            const auto [cpu_out, gpu_out] = twin(cpu_free.out, free.out);
            gpu_test::expect_matches_cpu(gpu_out, cpu_out, out_ref, act(), GetParam(), "out");
            const auto [cpu_dinp, gpu_dinp] = twin(cpu_free.dinp, free.dinp);
            gpu_test::expect_matches_cpu(gpu_dinp, cpu_dinp, dinp_ref, act(), GetParam(), "dinp");
        }
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuParameterFreeNorms,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         gpu_test::precision_test_name);

}  // namespace
}  // namespace mixgpt
