// What the telemetry tests of both backends share (tests/test_train_telemetry.cpp,
// tests/gpu/test_gpu_telemetry.cpp): one measured step's record against float64 statistics of the
// step's own tensors, read back and computed here (tests/reference_f64.h), and an FP8 step's
// per-tensor amax, scale and saturation against the weights it quantized.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "dist/communicator.h"
#include "model/gpt.h"
#include "model/token_batch.h"
#include "tests/reference_f64.h"
#include "tests/test_train_support.h"
#include "model/fp8_linears.h"
#include "train/loss_scaling.h"
#include "train/telemetry.h"
#include "train/train_step.h"

namespace mixgpt::test {

// A tensor of any float dtype in backend memory, as doubles.
inline std::vector<double> read_doubles(Backend& backend, const TensorView& view) {
    std::vector<unsigned char> bytes(view.bytes());
    backend.copy_to_host(bytes.data(), view.data, bytes.size());
    std::vector<float> values(static_cast<size_t>(view.numel()));
    convert_to_float(bytes.data(), view.dtype, values.data(), values.size());
    return std::vector<double>(values.begin(), values.end());
}

inline std::vector<double> slice(const std::vector<double>& values, const ParameterView& view) {
    const auto begin = values.begin() + view.offset;
    return std::vector<double>(begin, begin + view.real_rows * (view.numel / view.shape[0]));
}

inline void expect_relative(double got, double want, double bound, const std::string& what) {
    EXPECT_LE(std::fabs(got - want), bound * std::max(std::fabs(want), 1e-300)) << what << ": " << got << " vs " << want;
}

// The tiny GPT-2 (testing_support::tiny_config) and its Llama-style twin: one key/value head for the
// two query heads, SwiGLU, an untied head, RoPE (head dimension 16, which the simulator's
// shared-memory budgets are set for).
inline std::vector<GPTConfig> telemetry_configs() {
    GPTConfig llama = testing_support::tiny_config();
    llama.arch = Arch::llama;
    llama.n_kv_head = 1;
    llama.ffn_hidden = 48;
    llama.tie_embeddings = false;
    llama.rope_theta = 1000.f;
    return {testing_support::tiny_config(), llama};
}

// One AdamW step (learning rate 1e-2, the precision's loss scaling) of `model` over `windows`
// (B, T+1), measured by a Telemetry of interval 1; *loss_scale: the scale the step's loss used.
inline TelemetryRecord measured_step(GPT& model, Backend& backend, const std::vector<int32_t>& windows,
                                     float* loss_scale) {
    SingleProcessCommunicator alone;
    const LossScalePolicy policy = parse_loss_scale("auto", backend.precision());
    const StepStatus initial = policy.initial_status();
    TrainStep step(model, alone, 1, policy.config(), initial);
    Telemetry telemetry(model, backend, 1, alone);
    EXPECT_TRUE(telemetry.due(0));
    telemetry.before_step();
    step.begin();
    step.micro_step(windows.data());
    AdamWHyper hyper;
    hyper.learning_rate = 1e-2f;
    step.finish(hyper);
    step.result();
    *loss_scale = initial.loss_scale;
    return telemetry.after_step(1, initial.loss_scale, step.kept_gradients());
}

// One step of `config` (2 windows of T 16, accumulation 1) with a Telemetry of interval 1 on
// `backend`. The forward statistics are judged against a forward() over the same batch with the
// weights before the step, which the step's own forward repeats bit for bit; the rest against
// the gradients and masters after the step and the masters before it. Sums of squares within
// 1e-12 relative (double sums in another order), maxima and counts exactly.
inline void expect_telemetry_matches_f64(Backend& backend, const GPTConfig& config) {
    constexpr int B = 2, T = 16;
    GPT model(backend, config, B, T, Recompute::none);
    testing_support::load_initial_parameters(model, 21);
    const std::vector<int32_t> windows = testing_support::random_windows(B, T, config.vocab_size, 7);
    TokenBatch batch(backend, B, T);
    batch.upload(windows.data());
    model.forward(batch.inputs(), batch.targets());
    std::vector<std::vector<double>> outputs, lses;
    for (int l = 0; l < config.n_layer; ++l) {
        outputs.push_back(read_doubles(backend, model.block_output(l)));
        lses.push_back(read_doubles(backend, model.attention_lse(l)));
    }
    const std::vector<double> logits = read_doubles(backend, model.logits());
    const std::vector<double> before = read_doubles(backend, model.master_parameters());

    float loss_scale = 1;
    const TelemetryRecord record = measured_step(model, backend, windows, &loss_scale);

    const DType act = model.working_parameters().dtype;
    const double small = act == DType::f16 ? std::ldexp(1.0, -14) : std::ldexp(1.0, -126);
    const std::vector<double> gradients = read_doubles(backend, model.gradients()),
                              after = read_doubles(backend, model.master_parameters());
    const std::vector<ParameterView>& views = model.layout().views();
    ASSERT_EQ(record.tensors.size(), views.size());
    double gradient_amax = 0;
    for (size_t i = 0; i < views.size(); ++i) {
        const TensorTelemetry& got = record.tensors[i];
        EXPECT_EQ(got.name, views[i].name);
        const F64Statistics gradient = f64_tensor_statistics(slice(gradients, views[i]), {}, small);
        const F64Statistics weight = f64_tensor_statistics(slice(after, views[i]), {}, small);
        const F64Statistics update = f64_tensor_statistics(slice(after, views[i]), slice(before, views[i]), small);
        expect_relative(got.grad_norm, std::sqrt(gradient.sum_squares) / loss_scale, 1e-12, got.name + " grad_norm");
        expect_relative(got.weight_norm, std::sqrt(weight.sum_squares), 1e-12, got.name + " weight_norm");
        expect_relative(got.update_ratio, std::sqrt(update.sum_squares) / std::sqrt(weight.sum_squares), 1e-12,
                        got.name + " update_ratio");
        EXPECT_EQ(got.grad_small_fraction, gradient.small / static_cast<double>(got.elements)) << got.name;
        EXPECT_EQ(got.grad_non_finite, 0) << got.name;
        EXPECT_GT(got.update_ratio, 0) << got.name << ": the step moved it";
        gradient_amax = std::max(gradient_amax, gradient.amax);
    }
    ASSERT_EQ(record.blocks.size(), static_cast<size_t>(config.n_layer));
    for (int l = 0; l < config.n_layer; ++l) {
        const F64Statistics output = f64_tensor_statistics(outputs[l], {}, small);
        const BlockTelemetry& got = record.blocks[static_cast<size_t>(l)];
        EXPECT_EQ(got.output_amax, output.amax) << "block " << l;
        expect_relative(got.output_rms, std::sqrt(output.sum_squares / static_cast<double>(outputs[l].size())), 1e-12,
                        "block output rms");
        EXPECT_EQ(got.attention_lse_amax, f64_tensor_statistics(lses[l], {}, small).amax) << "block " << l;
    }
    ASSERT_EQ(record.output_exponents.size(), static_cast<size_t>(config.n_layer));
    for (int l = 0; l < config.n_layer; ++l) {
        EXPECT_EQ(record.output_exponents[static_cast<size_t>(l)].layer, l);
        EXPECT_EQ(record.output_exponents[static_cast<size_t>(l)].counts, f64_exponent_histogram(outputs[l]))
            << "exponent bins of block output " << l;
    }
    EXPECT_EQ(record.logit_amax, f64_tensor_statistics(logits, {}, small).amax);
    // The gradients' exponent bins, per block and for the tensors outside the blocks.
    ASSERT_EQ(record.grad_exponents.size(), static_cast<size_t>(config.n_layer) + 1);
    std::vector<std::vector<uint64_t>> want_bins(record.grad_exponents.size(), std::vector<uint64_t>(kExponentBins, 0));
    for (const ParameterView& view : views) {
        const std::vector<uint64_t> bins = f64_exponent_histogram(slice(gradients, view));
        std::vector<uint64_t>& sum = want_bins[view.layer >= 0 ? static_cast<size_t>(view.layer) : want_bins.size() - 1];
        for (size_t bin = 0; bin < bins.size(); ++bin) sum[bin] += bins[bin];
    }
    for (size_t l = 0; l < want_bins.size(); ++l) {
        EXPECT_EQ(record.grad_exponents[l].layer, l + 1 < want_bins.size() ? static_cast<int>(l) : -1);
        EXPECT_EQ(record.grad_exponents[l].counts, want_bins[l]) << "exponent bins of histogram " << l;
    }
    if (act == DType::f16)
        expect_relative(record.loss_scale_headroom_bits, std::log2(65504.0 / gradient_amax), 1e-12, "headroom");
    else
        EXPECT_LT(record.loss_scale_headroom_bits, 0);
}

// The weight tensor each FP8 linear layer of a GPT-2 block quantizes.
inline Role fp8_weight_role(const std::string& role) {
    if (role == "qkv") return Role::qkv_weight;
    if (role == "attention_output") return Role::attention_output_weight;
    if (role == "mlp_input") return Role::mlp_input_weight;
    return Role::mlp_output_weight;
}

// One step of the tiny GPT-2 under Precision::fp8 (`backend`'s) with `scaling`, its forward scales
// first set to `weight_scale` so that the weights saturate: the record holds every block's 4
// linear layers × (input, weight, gradient); each weight's amax is the largest |w| of the working
// weight before the step and its saturated count twice (the forward's quantization and the input
// gradient's) the elements with fl(|w| · scale) > 448 (E4M3), counted here (under current scaling the scale is the weight's own and nothing saturates); the
// step's scales are those set; the per-kind sums are the step's saturation counts.
inline void expect_fp8_telemetry_matches(Backend& backend, Fp8Scaling scaling, float weight_scale) {
    constexpr int B = 2, T = 16;
    const GPTConfig config = testing_support::tiny_config();
    Fp8Options options;
    options.scaling.scaling = scaling;
    options.scaling.history_length = 4;
    GPT model(backend, config, B, T, Recompute::none, {}, options);
    testing_support::load_initial_parameters(model, 21);
    Fp8Linears& fp8 = *model.fp8();
    std::vector<float> state = fp8.flat();
    const int forward_tensors = 2 * (4 * config.n_layer + 1);
    for (int t = 0; t < forward_tensors; ++t) {
        state[static_cast<size_t>(t)] = weight_scale;
        state[static_cast<size_t>(forward_tensors + t)] = 1.f / weight_scale;
    }
    fp8.load_flat(state);
    const std::vector<double> working = read_doubles(backend, model.working_parameters());
    const std::vector<int32_t> windows = testing_support::random_windows(B, T, config.vocab_size, 7);

    float loss_scale = 1;
    const TelemetryRecord record = measured_step(model, backend, windows, &loss_scale);
    const Fp8Saturation saturation = fp8.take_saturation();

    ASSERT_EQ(record.fp8.size(), static_cast<size_t>(3 * 4 * config.n_layer)) << "no FP8 head by default";
    Fp8Saturation sums;
    int saturated_weights = 0;
    for (const Fp8StepTensor& tensor : record.fp8) {
        const std::string what = std::to_string(tensor.layer) + " " + tensor.role + " " + tensor.kind;
        (tensor.kind == "input" ? sums.inputs : tensor.kind == "weight" ? sums.weights : sums.gradients) +=
            tensor.saturated;
        EXPECT_EQ(tensor.fp8_max, tensor.kind == "gradient" ? 57344.0 : 448.0) << what;
        if (scaling == Fp8Scaling::delayed) {
            EXPECT_EQ(tensor.scale, tensor.kind == "gradient" ? 1.0 : weight_scale) << what << ": the step's scale";
        }
        if (tensor.kind != "weight") continue;
        const auto view = std::find_if(model.layout().views().begin(), model.layout().views().end(),
                                       [&](const ParameterView& v) {
                                           return v.layer == tensor.layer && v.role == fp8_weight_role(tensor.role);
                                       });
        ASSERT_NE(view, model.layout().views().end()) << what;
        const std::vector<double> weight = slice(working, *view);
        double amax = 0;
        uint64_t over = 0;
        for (const double w : weight) {
            amax = std::max(amax, std::fabs(w));
            over += std::fabs(static_cast<float>(w) * static_cast<float>(tensor.scale)) > 448.f ? 1 : 0;
        }
        if (scaling == Fp8Scaling::delayed)
            EXPECT_EQ(tensor.amax, amax) << what;
        else
            expect_relative(tensor.amax, amax, 1e-6, what + " amax (from the scale)");
        EXPECT_EQ(tensor.saturated, 2 * over) << what << ": quantized for the forward and the input gradient";
        saturated_weights += over > 0 ? 1 : 0;
        if (scaling == Fp8Scaling::delayed) {
            EXPECT_EQ(fp8_headroom_bits(tensor) < 0, over > 0) << what;
        }
    }
    EXPECT_EQ(sums.inputs, saturation.inputs);
    EXPECT_EQ(sums.weights, saturation.weights);
    EXPECT_EQ(sums.gradients, saturation.gradients);
    if (scaling == Fp8Scaling::delayed) {
        EXPECT_EQ(saturated_weights, 4 * config.n_layer) << "every weight saturated";
    }
}

}  // namespace mixgpt::test
