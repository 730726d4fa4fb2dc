// Field-by-field checkpoint comparisons shared by the checkpoint, broadcast and resume tests.
#pragma once

#include <gtest/gtest.h>

#include "model/checkpoint.h"

namespace mixgpt::test {

// What a resumed run continues from: position, weights, optimizer state, loss scaler, data, the
// loss-spike guard's statistics.
inline void expect_same_training_state(const Checkpoint& got, const Checkpoint& expected) {
    EXPECT_EQ(got.step, expected.step);
    EXPECT_EQ(got.seed, expected.seed);
    EXPECT_EQ(got.tokens_seen, expected.tokens_seen);
    EXPECT_EQ(got.bad_steps_in_a_row, expected.bad_steps_in_a_row);
    EXPECT_EQ(got.parameters, expected.parameters);
    EXPECT_EQ(got.working_bits, expected.working_bits);
    EXPECT_EQ(got.adam_m, expected.adam_m);
    EXPECT_EQ(got.adam_v, expected.adam_v);
    EXPECT_EQ(got.status.loss_scale, expected.status.loss_scale);
    EXPECT_EQ(got.status.clean_steps, expected.status.clean_steps);
    EXPECT_EQ(got.status.skipped_steps, expected.status.skipped_steps);
    EXPECT_EQ(got.status.optimizer_steps, expected.status.optimizer_steps);
    EXPECT_EQ(got.loader_state, expected.loader_state);
    ASSERT_EQ(got.spike_guard.has_value(), expected.spike_guard.has_value());
    if (got.spike_guard) {
        EXPECT_EQ(got.spike_guard->losses, expected.spike_guard->losses);
        EXPECT_EQ(got.spike_guard->grad_norms, expected.spike_guard->grad_norms);
        EXPECT_EQ(got.spike_guard->skips, expected.spike_guard->skips);
        EXPECT_EQ(got.spike_guard->skips_in_a_row, expected.spike_guard->skips_in_a_row);
    }
}

// Every field: the training state, the model's shape, the tokenizer and the run's options.
inline void expect_same_checkpoint(const Checkpoint& got, const Checkpoint& expected) {
    EXPECT_EQ(got.config.n_layer, expected.config.n_layer);
    EXPECT_EQ(got.config.n_head, expected.config.n_head);
    EXPECT_EQ(got.config.n_embd, expected.config.n_embd);
    EXPECT_EQ(got.config.vocab_size, expected.config.vocab_size);
    EXPECT_EQ(got.config.max_seq_len, expected.config.max_seq_len);
    EXPECT_EQ(got.tokenizer_path, expected.tokenizer_path);
    EXPECT_EQ(got.tokenizer_sha256, expected.tokenizer_sha256);
    EXPECT_EQ(got.precision, expected.precision);
    EXPECT_EQ(got.options, expected.options);
    expect_same_training_state(got, expected);
}

}  // namespace mixgpt::test
