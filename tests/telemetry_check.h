// What the telemetry tests of both backends share (tests/test_train_telemetry.cpp,
// tests/gpu/test_gpu_telemetry.cpp): one measured step's record against float64 statistics of the
// step's own tensors, read back and computed here (tests/reference_f64.h).
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

    SingleProcessCommunicator alone;
    const LossScalePolicy policy = parse_loss_scale("auto", backend.precision());
    const StepStatus initial = policy.initial_status();
    TrainStep step(model, alone, 1, policy.config(), initial);
    Telemetry telemetry(model, backend, 1);
    ASSERT_TRUE(telemetry.due(0));
    telemetry.before_step();
    step.begin();
    step.micro_step(windows.data());
    AdamWHyper hyper;
    hyper.learning_rate = 1e-2f;
    step.finish(hyper);
    step.result();
    const TelemetryRecord record = telemetry.after_step(1, initial.loss_scale);

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
        expect_relative(got.grad_norm, std::sqrt(gradient.sum_squares) / initial.loss_scale, 1e-12, got.name + " grad_norm");
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
    EXPECT_EQ(record.logit_amax, f64_tensor_statistics(logits, {}, small).amax);
    if (act == DType::f16)
        expect_relative(record.loss_scale_headroom_bits, std::log2(65504.0 / gradient_amax), 1e-12, "headroom");
    else
        EXPECT_LT(record.loss_scale_headroom_bits, 0);
}

}  // namespace mixgpt::test
