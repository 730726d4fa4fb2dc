// The loss-spike guard's training runs (train/spike_guard.h), shared by the CPU tests
// (tests/test_train_spike_guard.cpp) and their GPU runs (tests/gpu/test_gpu_spike_guard.cpp): the
// same assertions on whichever backend the options name.
//
// A spike is planted as a corrupted batch: every token of the step's micro-batches replaced by one
// token id (the trainer's test-only BatchEditor), which the tiny model trained on sentences finds
// very unlikely, so the step's loss and gradient norm jump far above the window's.
#pragma once

#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "tests/checkpoint_expectations.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt::testing_support {

constexpr int64_t kPlantedStep = 10;    // judged: past the warm-up of spike_guard_options' window (4)
constexpr int32_t kPlantedToken = 299;  // the tiny dataset's last vocabulary id

// tiny_train_options on `device` with the guard on (z 3, a window of 4, 3 held steps in a row stop
// the run), 12 steps, a checkpoint after each step, all of them kept.
inline TrainOptions spike_guard_options(const std::string& device, const std::string& output_dir) {
    TrainOptions options = tiny_train_options(output_dir);
    options.device = device;
    options.steps = 12;
    options.skip_spikes = 3;
    options.spike_window = 4;
    options.max_spike_skips = 3;
    options.checkpoint_interval = 1;
    options.keep_checkpoints = 100;
    options.eval_batches = 1;  // no check reads the validation loss: one batch, not the whole split
    return options;
}

// Trains on windows of kPlantedToken alone at each of `steps`, on the batches of `options`.
inline BatchEditor planted_spikes(const TrainOptions& options, const std::set<int64_t>& steps) {
    const size_t count = static_cast<size_t>(options.batch_size) * (options.seq_len + 1);
    const auto corrupted = std::make_shared<std::vector<int32_t>>(count, kPlantedToken);
    return [steps, corrupted](int64_t step, const Batch& batch) {
        return steps.count(step) != 0 ? corrupted->data() : batch.tokens;
    };
}

// Every "train" line of a metrics file, by step (a later line for the same step wins).
inline std::map<int64_t, nlohmann::json> train_lines(const std::string& metrics_path) {
    std::map<int64_t, nlohmann::json> lines;
    std::ifstream file(metrics_path);
    for (std::string line; std::getline(file, line);) {
        const nlohmann::json record = nlohmann::json::parse(line);
        if (record["type"] == "train") lines[record["step"].get<int64_t>()] = record;
    }
    return lines;
}

inline Checkpoint checkpoint_at(const TrainOptions& options, int64_t step) {
    return read_checkpoint(checkpoint_path(checkpoint_directory(options.output_dir), step));
}

// Weights, working copy, AdamW moments and loss scaler the same: no update between the two.
inline void expect_same_weights_and_optimizer(const Checkpoint& got, const Checkpoint& expected) {
    EXPECT_EQ(got.parameters, expected.parameters);
    EXPECT_EQ(got.working_bits, expected.working_bits);
    EXPECT_EQ(got.adam_m, expected.adam_m);
    EXPECT_EQ(got.adam_v, expected.adam_v);
    EXPECT_EQ(got.status.optimizer_steps, expected.status.optimizer_steps);
    EXPECT_EQ(got.status.loss_scale, expected.status.loss_scale);
    EXPECT_EQ(got.status.clean_steps, expected.status.clean_steps);
    EXPECT_EQ(got.status.skipped_steps, expected.status.skipped_steps);
}

// The planted spike is held: its update is not applied (weights and optimizer state of step
// kPlantedStep are step kPlantedStep - 1's, the data position moved on), it is the only step held,
// counted in metrics.jsonl, and the next step updates again. Without the guard the same batch
// changes the weights: the planted step is a spike the run would have trained on.
inline void expect_planted_spike_held(const std::string& device, const std::string& directory_name) {
    test::TempDirectory directory(directory_name);
    TrainOptions options = spike_guard_options(device, directory.file("guarded"));
    const TrainResult guarded = run_training(options, nullptr, planted_spikes(options, {kPlantedStep}));
    ASSERT_EQ(guarded.steps_done, options.steps);

    const std::map<int64_t, nlohmann::json> lines = train_lines(guarded.metrics_path);
    ASSERT_EQ(lines.size(), static_cast<size_t>(options.steps));
    for (const auto& [step, line] : lines) {
        SCOPED_TRACE("step " + std::to_string(step));
        EXPECT_EQ(line["spike_skipped"].get<bool>(), step == kPlantedStep) << line.dump();
        EXPECT_EQ(line["spike_skips"].get<int64_t>(), step < kPlantedStep ? 0 : 1);
    }
    const Checkpoint before = checkpoint_at(options, kPlantedStep - 1);
    const Checkpoint held = checkpoint_at(options, kPlantedStep);
    const Checkpoint after = checkpoint_at(options, kPlantedStep + 1);
    expect_same_weights_and_optimizer(held, before);
    EXPECT_NE(held.loader_state, before.loader_state);
    EXPECT_EQ(held.tokens_seen, before.tokens_seen + options.batch_size * options.seq_len);
    EXPECT_NE(after.parameters, held.parameters);
    EXPECT_EQ(after.status.optimizer_steps, held.status.optimizer_steps + 1);
    ASSERT_TRUE(held.spike_guard.has_value());
    EXPECT_EQ(held.spike_guard->skips, 1);
    EXPECT_EQ(held.spike_guard->skips_in_a_row, 1);
    EXPECT_EQ(held.spike_guard->losses, before.spike_guard->losses) << "a held step enters no window";
    EXPECT_EQ(after.spike_guard->skips_in_a_row, 0);

    options.output_dir = directory.file("unguarded");
    options.skip_spikes = 0;
    const TrainResult unguarded = run_training(options, nullptr, planted_spikes(options, {kPlantedStep}));
    const Checkpoint trained_on = checkpoint_at(options, kPlantedStep);
    EXPECT_NE(trained_on.parameters, checkpoint_at(options, kPlantedStep - 1).parameters);
    EXPECT_FALSE(trained_on.spike_guard.has_value());
    const nlohmann::json planted = train_lines(unguarded.metrics_path).at(kPlantedStep);
    EXPECT_FALSE(planted.contains("spike_skipped"));
    EXPECT_GT(planted["grad_norm"].get<double>(), 3 * lines.at(kPlantedStep - 1)["grad_norm"].get<double>())
        << "the planted batch is a spike (of the gradient norm: the tiny model, barely trained, finds the "
           "repeated token no less likely than the sentences)";
}

// 12 steps straight equal 7 steps stopped by SIGTERM and resumed, bit for bit, with the spike
// planted at step 10: the same weights, optimizer state, guard statistics and train lines. The
// resumed run must restore the window: with a new warm-up of 4 steps it would judge step 10 from
// steps 8 and 9 only, and apply it.
inline void expect_guarded_resume_equals_straight_run(TrainOptions options,
                                                      const std::string& directory_name) {
    test::TempDirectory directory(directory_name);
    options.output_dir = directory.file("straight");
    const BatchEditor plant = planted_spikes(options, {kPlantedStep});
    const TrainResult straight = run_training(options, nullptr, plant);
    ASSERT_EQ(straight.steps_done, options.steps);

    options.output_dir = directory.file("stopped");
    const TrainResult first = run_training(
        options,
        [](const TrainMetrics& metrics) {
            if (metrics.step == 7) std::raise(SIGTERM);
        },
        plant);
    ASSERT_TRUE(first.stopped_by_signal);
    ASSERT_EQ(first.steps_done, 7);
    ASSERT_EQ(checkpoint_at(options, 7).spike_guard->losses.size(), 4u);
    options.resume = "auto";
    const TrainResult second = run_training(options, nullptr, plant);
    ASSERT_EQ(second.steps_done, options.steps);

    const Checkpoint expected = read_checkpoint(straight.last_checkpoint);
    const Checkpoint resumed = read_checkpoint(second.last_checkpoint);
    ASSERT_TRUE(expected.spike_guard.has_value());
    test::expect_same_training_state(resumed, expected);  // the guard's statistics included
    EXPECT_EQ(expected.spike_guard->skips, 1);
    const std::map<int64_t, nlohmann::json> straight_lines = train_lines(straight.metrics_path);
    const std::map<int64_t, nlohmann::json> resumed_lines = train_lines(second.metrics_path);
    ASSERT_EQ(resumed_lines.size(), straight_lines.size());
    for (const auto& [step, line] : straight_lines) {
        SCOPED_TRACE("step " + std::to_string(step));
        const nlohmann::json& other = resumed_lines.at(step);
        for (const char* field :
             {"loss", "grad_norm", "lr", "loss_scale", "skipped", "spike_skipped", "spike_skips", "tokens"})
            EXPECT_EQ(other[field], line[field]) << field;
    }
}

// Planted spikes at steps 10, 11 and 12 with 3 held steps in a row allowed: the run stops after
// step 12 with one line naming the limit and the checkpoint it wrote, which holds step 9's weights
// and optimizer state and the guard's count.
inline void expect_held_steps_in_a_row_stop_the_run(const std::string& device,
                                                    const std::string& directory_name) {
    test::TempDirectory directory(directory_name);
    TrainOptions options = spike_guard_options(device, directory.file("run"));
    const std::string message = test::error_of([&] {
        run_training(options, nullptr, planted_spikes(options, {10, 11, 12}));
    });
    const std::string written = checkpoint_path(checkpoint_directory(options.output_dir), 12);
    EXPECT_NE(message.find("training stopped at step 12: --max-spike-skips 3 reached (the loss-spike guard "
                           "held 3 steps in a row); " +
                           written + " holds the last applied update"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    const Checkpoint stopped = checkpoint_at(options, 12);
    expect_same_weights_and_optimizer(stopped, checkpoint_at(options, 9));
    EXPECT_EQ(stopped.step, 12);
    ASSERT_TRUE(stopped.spike_guard.has_value());
    EXPECT_EQ(stopped.spike_guard->skips, 3);
    EXPECT_EQ(stopped.spike_guard->skips_in_a_row, 3);
    EXPECT_EQ(newest_valid_checkpoint(checkpoint_directory(options.output_dir)), written);
}

}  // namespace mixgpt::testing_support
