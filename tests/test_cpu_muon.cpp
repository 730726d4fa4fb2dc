// Muon on the CPU backend (kernels/cpu/muon.cpp through train/muon_step.h) against the float64
// reference of one whole step (tests/reference_f64_muon.h), the singular values its Newton-Schulz
// iteration is designed to give, its skip, and its parameter groups.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/ops.h"
#include "model/gpt.h"
#include "tests/reference_f64_muon.h"
#include "tests/test_cpu_support.h"
#include "tests/test_model_support.h"
#include "train/muon_step.h"
#include "train/parameter_groups.h"

namespace mixgpt {
namespace {

using test::HostTensor;

// Elementwise parts alone (momentum, Nesterov, normalisation, scale, decay: no products) in fp32.
constexpr double kElementwiseTolerance = 1e-6;

double relative_error(const std::vector<double>& result, const std::vector<double>& reference) {
    double difference = 0, norm = 0;
    for (size_t i = 0; i < result.size(); ++i) {
        difference += (result[i] - reference[i]) * (result[i] - reference[i]);
        norm += reference[i] * reference[i];
    }
    return std::sqrt(difference / norm);
}

// Eigenvalues of a symmetric (n, n) matrix by cyclic Jacobi rotations, in float64.
std::vector<double> symmetric_eigenvalues(std::vector<double> a, int64_t n) {
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0;
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = i + 1; j < n; ++j) off += a[i * n + j] * a[i * n + j];
        if (off < 1e-26) break;
        for (int64_t p = 0; p < n; ++p)
            for (int64_t q = p + 1; q < n; ++q) {
                if (a[p * n + q] == 0) continue;
                const double theta = (a[q * n + q] - a[p * n + p]) / (2 * a[p * n + q]);
                const double t = (theta >= 0 ? 1 : -1) / (std::abs(theta) + std::sqrt(theta * theta + 1));
                const double c = 1 / std::sqrt(t * t + 1), s = t * c;
                for (int64_t k = 0; k < n; ++k) {  // columns p, q
                    const double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int64_t k = 0; k < n; ++k) {  // rows p, q
                    const double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
            }
    }
    std::vector<double> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[i] = a[i * n + i];
    return values;
}

// The min(rows, cols) singular values of x (rows, cols), descending.
std::vector<double> singular_values(const std::vector<double>& x, int64_t rows, int64_t cols) {
    const bool tall = rows > cols;
    const int64_t s = tall ? cols : rows;
    std::vector<double> gram(static_cast<size_t>(s * s), 0.0);
    for (int64_t i = 0; i < s; ++i)
        for (int64_t j = 0; j < s; ++j)
            for (int64_t k = 0; k < (tall ? rows : cols); ++k)
                gram[i * s + j] +=
                    tall ? x[k * cols + i] * x[k * cols + j] : x[i * cols + k] * x[j * cols + k];
    std::vector<double> values = symmetric_eigenvalues(gram, s);
    for (double& value : values) value = std::sqrt(std::max(value, 0.0));
    std::sort(values.rbegin(), values.rend());
    return values;
}

struct Shape {
    int64_t rows, cols;
};

// Two wide matrices of one shape (one batch), a tall one and a square one, one after another.
std::vector<MuonMatrix> test_matrices() {
    std::vector<MuonMatrix> matrices;
    int64_t offset = 0;
    for (const Shape shape : {Shape{24, 72}, Shape{24, 72}, Shape{80, 16}, Shape{32, 32}}) {
        matrices.push_back({"m" + std::to_string(matrices.size()), offset, shape.rows, shape.cols});
        offset += shape.rows * shape.cols;
    }
    return matrices;
}

std::vector<double> part(const std::vector<double>& arena, const MuonMatrix& matrix) {
    return {arena.begin() + matrix.offset, arena.begin() + matrix.offset + matrix.rows * matrix.cols};
}

struct StepCase {
    int ns_steps;
    bool nesterov;
    float loss_scale;
};

// Inputs of one step over test_matrices(): fp32 values as float64.
struct StepInputs {
    std::vector<MuonMatrix> matrices = test_matrices();
    int64_t n = matrices.back().offset + matrices.back().rows * matrices.back().cols;
    std::vector<double> params = test::rounded(test::random_normal(n, 301, 0.02), DType::f32);
    std::vector<double> momentum = test::rounded(test::random_normal(n, 303, 0.5), DType::f32);
    std::vector<double> grads;
    explicit StepInputs(float loss_scale)
        : grads(test::rounded(test::random_normal(n, 302, loss_scale), DType::f32)) {}
};

// A step's result: the update (params - params before, so that the fp32 storage of params does
// not hide its error) and the new momentum, over all matrices.
struct StepResult {
    std::vector<double> update, momentum;
};

constexpr float kLearningRate = 0.5f;  // an update as large as the params, as Muon's is early on
constexpr float kWeightDecay = 0.1f;

StepResult reference_step(const StepInputs& in, const StepCase& c, DType stored) {
    StepResult result;
    for (const MuonMatrix& matrix : in.matrices) {
        F64MuonHyper hyper;
        hyper.loss_scale = c.loss_scale;
        hyper.learning_rate = kLearningRate;
        hyper.weight_decay = kWeightDecay;
        hyper.nesterov = c.nesterov;
        hyper.ns_steps = c.ns_steps;
        std::vector<double> p = part(in.params, matrix), m = part(in.momentum, matrix);
        f64_muon_step(p, m, part(in.grads, matrix), matrix.rows, matrix.cols, hyper, stored);
        const std::vector<double> p0 = part(in.params, matrix);
        for (size_t i = 0; i < p.size(); ++i) result.update.push_back(p[i] - p0[i]);
        result.momentum.insert(result.momentum.end(), m.begin(), m.end());
    }
    return result;
}

StepResult backend_step(const StepInputs& in, const StepCase& c, DType ns_dtype) {
    auto backend = make_backend({"cpu", 0, Precision::fp32, 0});
    HostTensor params(in.params, DType::f32, {in.n}), grads(in.grads, DType::f32, {in.n});
    HostTensor momentum(in.momentum, DType::f32, {in.n});
    MuonHyper hyper;
    hyper.learning_rate = kLearningRate;
    hyper.nesterov = c.nesterov;
    hyper.ns_steps = c.ns_steps;
    hyper.ns_dtype = ns_dtype;
    hyper.weight_decay = kWeightDecay;
    StepStatus status;
    status.loss_scale = c.loss_scale;
    MuonStep step(*backend, in.matrices, ns_dtype);
    step.step(params.view(), grads.view(), momentum.view(), TensorView(), hyper, &status);
    StepResult result{params.values(), momentum.values()};
    for (int64_t i = 0; i < in.n; ++i) result.update[i] -= in.params[i];
    return result;
}

class CpuMuonStep : public ::testing::TestWithParam<StepCase> {};

// Without the iteration every operation is elementwise: within 1e-6 of float64.
TEST_P(CpuMuonStep, ElementwisePartsWithin1e6OfFloat64) {
    StepCase c = GetParam();
    c.ns_steps = 0;
    const StepInputs in(c.loss_scale);
    const StepResult result = backend_step(in, c, DType::f32), reference = reference_step(in, c, DType::f32);
    EXPECT_LE(relative_error(result.update, reference.update), kElementwiseTolerance);
    EXPECT_LE(relative_error(result.momentum, reference.momentum), kElementwiseTolerance);
}

// With five iterations in fp32 the products' fp32 sums add their error, amplified up to a = 3.4445
// per iteration along small singular values: the FP32 criterion, not 1e-6 (measured: 9.96e-7 here;
// numpy's fp32 iteration is 1.0-1.5e-6 from float64 on such shapes).
TEST_P(CpuMuonStep, Fp32StepWithinTheFp32CriterionOfFloat64) {
    const StepCase c = GetParam();
    const StepInputs in(c.loss_scale);
    const StepResult result = backend_step(in, c, DType::f32), reference = reference_step(in, c, DType::f32);
    EXPECT_LE(relative_error(result.update, reference.update), test::kFp32Tolerance);
    EXPECT_LE(relative_error(result.momentum, reference.momentum), kElementwiseTolerance);
}

// bf16 iterate: within twice the error of a float64 step that rounds X, A and B to bf16 where
// the kernels store them (GUIDE 2.7).
TEST_P(CpuMuonStep, Bf16StepWithinTwiceTheBf16ReferenceError) {
    const StepCase c = GetParam();
    const StepInputs in(c.loss_scale);
    const StepResult exact = reference_step(in, c, DType::f32);
    const double yardstick = relative_error(reference_step(in, c, DType::bf16).update, exact.update);
    const StepResult result = backend_step(in, c, DType::bf16);
    EXPECT_GT(yardstick, 1e-3);  // what bf16 storage costs, not something smaller
    EXPECT_LE(relative_error(result.update, exact.update), 2 * yardstick) << "the reference's " << yardstick;
    EXPECT_LE(relative_error(result.momentum, exact.momentum), kElementwiseTolerance);
}

INSTANTIATE_TEST_SUITE_P(Cases, CpuMuonStep,
                         ::testing::Values(StepCase{5, true, 1.f}, StepCase{5, false, 1.f},
                                           StepCase{5, true, 1024.f}));

// The normalised momentum of `grads` (rows, cols) after muon_momentum and muon_newton_schulz.
std::vector<double> orthogonalised(const std::vector<double>& grads, int64_t rows, int64_t cols,
                                   DType dtype) {
    auto backend = make_backend({"cpu", 0, Precision::fp32, 0});
    HostTensor g(test::rounded(grads, DType::f32), DType::f32, {rows, cols});
    HostTensor momentum(DType::f32, {rows, cols}), x(dtype, {1, rows, cols});
    const TensorView slot(x.view().data, dtype, {rows, cols});
    StepStatus status;
    backend->muon_momentum(slot, momentum.view(), g.view(), 0.95f, true, &status);
    backend->muon_newton_schulz(x.view(), 5, &status);
    return x.values();
}

// Five iterations take every singular value of the normalised input at or above 1.1e-3 into
// [0.5, 1.5]: 3.4445 per step lifts 1.1e-3 past 0.5, and the polynomial keeps the rest within
// [0.68, 1.21] (float64 of the scalar map). Random rectangular matrices have no smaller ones.
TEST(CpuMuon, SingularValuesInTheBandOnRandomMatrices) {
    for (const DType dtype : {DType::f32, DType::bf16})
        for (const Shape shape : {Shape{32, 96}, Shape{96, 32}, Shape{64, 256}}) {
            const std::vector<double> x =
                orthogonalised(test::random_normal(static_cast<size_t>(shape.rows * shape.cols), 310),
                               shape.rows, shape.cols, dtype);
            const std::vector<double> values = singular_values(x, shape.rows, shape.cols);
            EXPECT_GE(values.back(), 0.5) << dtype_name(dtype) << " " << shape.rows << "x" << shape.cols;
            EXPECT_LE(values.front(), 1.5) << dtype_name(dtype) << " " << shape.rows << "x" << shape.cols;
        }
}

// A real gradient (a tiny model's, for q and for the MLP's input matrix) has singular values of all
// sizes, some below the iteration's reach: those at or above 1.1e-3 of its norm end in the band,
// and none leaves it upwards.
TEST(CpuMuon, SingularValuesInTheBandOnAModelsGradients) {
    const GPTConfig config = test::tiny_config();
    constexpr int64_t kBatch = 4, kLength = 16;
    auto backend = make_backend({"cpu", 0, Precision::fp32, 0});
    GPT model(*backend, config, kBatch, kLength, Recompute::none);
    const std::vector<float> values = test::spread_parameters(model.layout(), 7);
    model.load_master_parameters(values.data(), model.layout().total());
    const std::vector<int32_t> tokens = test::random_tokens(kBatch * kLength, config.vocab_size, 11);
    const std::vector<int32_t> targets = test::random_tokens(kBatch * kLength, config.vocab_size, 12);
    const test::PassResult pass = test::training_pass(model, tokens, targets, kBatch, kLength);
    const std::vector<double> gradients(pass.gradients.begin(), pass.gradients.end());
    const ParameterGroups groups = muon_parameter_groups(config, model.layout());
    int checked = 0;
    for (const MuonMatrix& matrix : groups.muon) {
        if (matrix.name != "h.0.attn.c_attn.weight[q]" && matrix.name != "h.1.mlp.c_fc.weight") continue;
        ++checked;
        const std::vector<double> g = part(gradients, matrix);
        double norm = 0;
        for (double value : g) norm += value * value;
        norm = std::sqrt(norm);
        const std::vector<double> input = singular_values(g, matrix.rows, matrix.cols);
        const auto reachable =
            std::count_if(input.begin(), input.end(), [&](double s) { return s >= 1.1e-3 * norm; });
        ASSERT_GT(reachable, 4) << matrix.name;
        for (const DType dtype : {DType::f32, DType::bf16}) {
            const std::vector<double> output =
                singular_values(orthogonalised(g, matrix.rows, matrix.cols, dtype), matrix.rows, matrix.cols);
            EXPECT_LE(output.front(), 1.5) << matrix.name << " " << dtype_name(dtype);
            EXPECT_GE(output[static_cast<size_t>(reachable - 1)], 0.5)
                << matrix.name << " " << dtype_name(dtype);
        }
    }
    EXPECT_EQ(checked, 2);
}

TEST(CpuMuon, SkippedStepChangesNothing) {
    auto backend = make_backend({"cpu", 0, Precision::bf16, 0});
    const std::vector<double> p0 = test::rounded(test::random_normal(24 * 72, 320, 0.02), DType::f32);
    HostTensor params(p0, DType::f32, {24, 72}), working(p0, DType::bf16, {24, 72});
    HostTensor grads(test::random_normal(24 * 72, 321), DType::f32, {24, 72});
    HostTensor momentum(test::random_normal(24 * 72, 322), DType::f32, {24, 72});
    HostTensor x(test::random_normal(24 * 72, 323), DType::bf16, {1, 24, 72});
    const std::vector<double> momentum0 = momentum.values(), x0 = x.values(), working0 = working.values();
    const TensorView slot(x.view().data, DType::bf16, {24, 72});
    StepStatus status;
    status.skip = 1;
    backend->muon_momentum(slot, momentum.view(), grads.view(), 0.95f, true, &status);
    backend->muon_newton_schulz(x.view(), 5, &status);
    backend->muon_update(params.view(), working.view(), slot, 0.02f, 1.f, 0.1f, false, 0, &status);
    EXPECT_EQ(momentum.values(), momentum0);
    EXPECT_EQ(x.values(), x0);
    EXPECT_EQ(params.values(), p0);
    EXPECT_EQ(working.values(), working0);
}

TEST(CpuMuon, UpdateWritesTheWorkingCopyRoundedToNearest) {
    auto backend = make_backend({"cpu", 0, Precision::bf16, 0});
    const std::vector<double> p0 = test::rounded(test::random_normal(16 * 8, 330, 0.02), DType::f32);
    const std::vector<double> x0 = test::rounded(test::random_normal(16 * 8, 331, 0.1), DType::bf16);
    HostTensor params(p0, DType::f32, {16, 8}), working(DType::bf16, {16, 8}), x(x0, DType::bf16, {16, 8});
    StepStatus status;
    backend->muon_update(params.view(), working.view(), x.view(), 0.02f, 2.f, 0.1f, false, 0, &status);
    const std::vector<double> p = params.values();
    for (size_t i = 0; i < p.size(); ++i) {
        const double expected = p0[i] - 0.02 * (2 * x0[i] + 0.1 * p0[i]);
        EXPECT_NEAR(p[i], expected, 1e-6 * (std::abs(p0[i]) + 0.04 * std::abs(x0[i])))
            << i;  // fp32 of the terms
    }
    EXPECT_EQ(working.values(), test::rounded(p, DType::bf16));
}

// --stochastic-rounding: with learning rate 0 every master stays a quarter ulp above 1 in bf16,
// so each working element is 1 or its upper neighbour, up with probability 1/4 (within 4 standard
// deviations over 100000 elements); the bits are those adamw_step's rounding draws for the same
// seed and index (one hash for both optimizers); to nearest (all 1) when not asked.
TEST(CpuMuon, UpdateRoundsTheWorkingCopyStochasticallyWhenAsked) {
    auto backend = make_backend({"cpu", 0, Precision::bf16, 0});
    const int64_t rows = 250, cols = 400, n = rows * cols;
    const double master = 1.0 + std::ldexp(1.0, -9);  // bf16's ulp at 1 is 2^-7
    HostTensor params(std::vector<double>(static_cast<size_t>(n), master), DType::f32, {rows, cols});
    HostTensor x(test::random_normal(n, 340), DType::f32, {rows, cols});
    HostTensor working(DType::bf16, {rows, cols});
    StepStatus status;
    backend->muon_update(params.view(), working.view(), x.view(), 0.f, 1.f, 0.f, true, 77, &status);
    const std::vector<double> rounded = working.values();
    int64_t up = 0;
    for (double value : rounded) {
        ASSERT_TRUE(value == 1.0 || value == 1.0 + std::ldexp(1.0, -7)) << value;
        up += value > 1.0 ? 1 : 0;
    }
    const double sigma = std::sqrt(0.25 * 0.75 / static_cast<double>(n));
    EXPECT_NEAR(static_cast<double>(up) / static_cast<double>(n), 0.25, 4 * sigma);

    HostTensor flat_params(std::vector<double>(static_cast<size_t>(n), master), DType::f32, {n});
    HostTensor grads(std::vector<double>(static_cast<size_t>(n), 0.0), DType::f32, {n});
    HostTensor m(std::vector<double>(static_cast<size_t>(n), 0.0), DType::f32, {n});
    HostTensor v(std::vector<double>(static_cast<size_t>(n), 0.0), DType::f32, {n});
    HostTensor adamw_working(DType::bf16, {n});
    AdamWHyper hyper;
    hyper.learning_rate = 0.f;
    hyper.stochastic_rounding = true;
    hyper.seed = 77;
    StepStatus adamw_status;
    backend->adamw_step(flat_params.view(), grads.view(), m.view(), v.view(), adamw_working.view(), 0, hyper,
                        &adamw_status);
    EXPECT_EQ(adamw_working.values(), rounded);

    backend->muon_update(params.view(), working.view(), x.view(), 0.f, 1.f, 0.f, true, 78, &status);
    EXPECT_NE(working.values(), rounded);  // another seed, other bits
    backend->muon_update(params.view(), working.view(), x.view(), 0.f, 1.f, 0.f, false, 77, &status);
    EXPECT_EQ(working.values(), std::vector<double>(static_cast<size_t>(n), 1.0));
}

// q, k and v separately (grouped: k and v of n_kv_head heads), SwiGLU's gate and up separately;
// AdamW on the rest, every element in exactly one group.
TEST(MuonParameterGroups, SplitPackedMatricesAndCoverTheArenaOnce) {
    for (const GPTConfig& config : {test::tiny_config(), test::tiny_llama_config()}) {
        const ParameterLayout layout(config);
        const ParameterGroups groups = muon_parameter_groups(config, layout);
        std::vector<int> covered(static_cast<size_t>(layout.total()), 0);
        for (const MuonMatrix& matrix : groups.muon)
            for (int64_t i = 0; i < matrix.rows * matrix.cols; ++i) ++covered[matrix.offset + i];
        for (const AdamWGroup& group : groups.adamw)
            for (int64_t i = group.begin; i < group.end; ++i) ++covered[i];
        EXPECT_TRUE(std::all_of(covered.begin(), covered.end(), [](int count) { return count == 1; }));
        const int64_t C = config.n_embd, hd = config.head_dim();
        const bool llama = config.family().mlp == MlpKind::swiglu;
        const std::string block = std::string(config.family().block_prefix) + "0.";
        const auto find = [&](const std::string& name) {
            for (const MuonMatrix& matrix : groups.muon)
                if (matrix.name == name) return matrix;
            ADD_FAILURE() << "no Muon matrix " << name;
            return MuonMatrix{};
        };
        const std::string qkv = block + (llama ? "attention.qkv.weight" : "attn.c_attn.weight");
        EXPECT_EQ(find(qkv + "[q]").rows, config.n_head * hd);
        EXPECT_EQ(find(qkv + "[k]").rows, config.kv_heads() * hd);
        EXPECT_EQ(find(qkv + "[v]").cols, C);
        if (llama) {
            EXPECT_EQ(find(block + "mlp.gate_up.weight[gate]").rows, config.mlp_hidden());
            EXPECT_EQ(find(block + "mlp.gate_up.weight[up]").rows, config.mlp_hidden());
        }
        EXPECT_EQ(groups.muon.size(), static_cast<size_t>(config.n_layer * (llama ? 7 : 6)));
        int embedding = 0, head = 0;
        for (const AdamWGroup& group : groups.adamw) {
            embedding += group.rate == AdamWRate::embedding;
            head += group.rate == AdamWRate::head;
            EXPECT_EQ(group.decay, group.rate != AdamWRate::base);
        }
        EXPECT_EQ(embedding, 1);
        EXPECT_EQ(head, config.tie_embeddings ? 0 : 1);
    }
}

TEST(MuonScale, IsTheSquareRootOfTallness) {
    EXPECT_FLOAT_EQ(muon_scale(3072, 768), 2.f);
    EXPECT_FLOAT_EQ(muon_scale(768, 3072), 1.f);
    EXPECT_FLOAT_EQ(muon_scale(768, 768), 1.f);
}

}  // namespace
}  // namespace mixgpt
