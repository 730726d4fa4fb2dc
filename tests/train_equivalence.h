// Trainer equivalences shared by the CPU tests (tests/test_train_*.cpp) and their GPU runs
// (tests/gpu/test_gpu_training.cpp): the same assertions, on whichever backend the options or the
// given backend name.
#pragma once

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "model/checkpoint.h"
#include "tests/checkpoint_expectations.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "dist/communicator.h"
#include "train/loss_scaling.h"
#include "train/train_step.h"
#include "train/trainer.h"

namespace mixgpt::testing_support {

// The resume cases: fp32 with gradient accumulation, bf16 with stochastic rounding, fp16 with
// dynamic loss scaling (the default for fp16).
struct ResumeCase {
    const char* name;
    Precision precision;
    bool stochastic_rounding;
    int accumulation_steps;
};

inline const std::vector<ResumeCase>& resume_cases() {
    static const std::vector<ResumeCase> cases = {{"fp32_accumulation", Precision::fp32, false, 2},
                                                  {"bf16_stochastic_rounding", Precision::bf16, true, 1},
                                                  {"fp16_dynamic_scaling", Precision::fp16, false, 1},
                                                  {"fp8_delayed_scaling_accumulation", Precision::fp8, false, 2}};
    return cases;
}

inline std::string resume_case_name(const ::testing::TestParamInfo<ResumeCase>& info) {
    return info.param.name;
}

// The tiny run of a resume case on `device`.
inline TrainOptions resume_case_options(const ResumeCase& c, const std::string& device) {
    TrainOptions options = tiny_train_options("");
    options.device = device;
    options.precision = c.precision;
    options.stochastic_rounding = c.stochastic_rounding;
    options.total_batch_tokens = int64_t{options.batch_size} * options.seq_len * c.accumulation_steps;
    return options;
}

// 8 steps straight equal 4 steps stopped by SIGTERM (checkpoint written, normal return), then a
// fresh trainer resuming from the run directory for the rest: the same weights, optimizer state,
// loss scale, data position and per-step losses, bit for bit. `options` names the device,
// precision and accumulation; its output_dir is replaced.
inline void expect_resume_equals_straight_run(TrainOptions options, const std::string& directory_name) {
    test::TempDirectory directory(directory_name);
    options.output_dir = directory.file("straight");
    options.steps = 8;
    options.eval_interval = 3;
    options.eval_batches = 2;
    const TrainResult straight = run_training(options);
    ASSERT_EQ(straight.steps_done, 8);
    ASSERT_FALSE(straight.stopped_by_signal);

    options.output_dir = directory.file("stopped");
    const TrainResult first = run_training(options, [](const TrainMetrics& metrics) {
        if (metrics.step == 4) std::raise(SIGTERM);
    });
    EXPECT_TRUE(first.stopped_by_signal);
    EXPECT_EQ(first.steps_done, 4);
    EXPECT_EQ(first.last_checkpoint, checkpoint_path(checkpoint_directory(options.output_dir), 4));

    options.resume = "auto";
    const TrainResult second = run_training(options);
    EXPECT_FALSE(second.stopped_by_signal);
    EXPECT_EQ(second.steps_done, 8);

    const Checkpoint expected = read_checkpoint(straight.last_checkpoint);
    const Checkpoint resumed = read_checkpoint(second.last_checkpoint);
    EXPECT_EQ(resumed.step, 8);
    test::expect_same_training_state(resumed, expected);
    EXPECT_EQ(train_losses(second.metrics_path), train_losses(straight.metrics_path));
    EXPECT_EQ(second.last_val_loss, straight.last_val_loss);
}

// Gradient accumulation on an fp32 backend: k = 4 micro-batches of B/4 give the same loss,
// gradients and updated weights as one batch of B (relative norm error <= 1e-6 each).
//
// The update alone (new - old weights) is printed, not asserted at 1e-6: AdamW's first step maps
// each gradient element g to about g / (|g| + eps), which magnifies the float rounding differences
// of near-zero gradient elements (measured ~1e-5 relative on this model).
inline void expect_four_micro_batches_equal_one_batch(Backend& backend) {
    const GPTConfig config = tiny_config();
    const int batch = 8, seq_len = 16, k = 4;
    GPT whole(backend, config, batch, seq_len, Recompute::none);
    GPT part(backend, config, batch / k, seq_len, Recompute::none);
    load_initial_parameters(whole, 5);
    load_initial_parameters(part, 5);
    const std::vector<float> initial = read_floats(backend, whole.master_parameters());
    const std::vector<int32_t> windows = random_windows(batch, seq_len, config.vocab_size, 9);

    SingleProcessCommunicator communicator;
    const LossScalePolicy no_scaling = parse_loss_scale("none", Precision::fp32);
    TrainStep one(whole, communicator, 1, no_scaling.config(), no_scaling.initial_status());
    TrainStep four(part, communicator, k, no_scaling.config(), no_scaling.initial_status());
    one.begin();
    one.micro_step(windows.data());
    four.begin();
    for (int i = 0; i < k; ++i)
        four.micro_step(windows.data() + static_cast<size_t>(i) * (batch / k) * (seq_len + 1));

    const std::vector<float> whole_gradients = read_floats(backend, whole.gradients());
    const std::vector<float> part_gradients = read_floats(backend, part.gradients());
    const double gradient_error = relative_error(part_gradients, whole_gradients);
    EXPECT_LE(gradient_error, 1e-6);

    AdamWHyper hyper;
    hyper.learning_rate = 1e-3f;
    one.finish(hyper);
    four.finish(hyper);
    const StepResult one_result = one.result(), four_result = four.result();
    EXPECT_NEAR(four_result.loss, one_result.loss, 1e-6 * one_result.loss);
    EXPECT_EQ(one_result.status.optimizer_steps, 1);
    EXPECT_EQ(four_result.status.optimizer_steps, 1);

    const std::vector<float> whole_weights = read_floats(backend, whole.master_parameters());
    const std::vector<float> part_weights = read_floats(backend, part.master_parameters());
    const double weight_error = relative_error(part_weights, whole_weights);
    EXPECT_LE(weight_error, 1e-6);
    EXPECT_GT(relative_error(whole_weights, initial), 1e-3);  // the step did move the weights

    std::vector<float> whole_update = whole_weights, part_update = part_weights;
    for (size_t i = 0; i < initial.size(); ++i) {
        whole_update[i] -= initial[i];
        part_update[i] -= initial[i];
    }
    std::printf("accumulation on %s: relative error of gradients %.3g, weights %.3g, update alone %.3g\n",
                backend.name().c_str(), gradient_error, weight_error,
                relative_error(part_update, whole_update));
}

}  // namespace mixgpt::testing_support
