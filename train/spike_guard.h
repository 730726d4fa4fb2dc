// The loss-spike guard, `train --skip-spikes Z` (issue 40; off by default): a step whose loss or
// gradient norm lies more than Z standard deviations above the mean of the last `window` applied
// steps is held: its update is not applied (train_step.h, hold_update).
//
//   warm-up     no step is judged until the window holds `window` applied steps (llm.c's rule)
//   judged      loss > mean + Z sd, or gradient norm > mean + Z sd (each over the window, the
//               standard deviation the population's); only values above the mean are spikes
//   window      the applied steps' loss and gradient norm; a held step does not enter it, so a
//               spike neither widens the band nor drags the mean; the oldest value leaves it
//   not judged  a step with a loss or gradient norm that is not finite: the divergence rule and
//               the loss scaling handle it (trainer.h) as without the guard; it enters nothing
//
// The gradient norm is the global one before clipping, unscaled by the loss scale (metrics'
// grad_norm); the loss is the cross-entropy (without a z-loss term). A held step still counts as a
// step: the data it read is consumed (not retried), the learning-rate schedule moves on, the loss
// scale neither backs off (the gradients were finite) nor counts the step as clean. Every rank
// decides the same: the loss and norm are global and the statistics are the same doubles on each.
//
// Cost: the decision needs the step's loss and norm before its update, so a guarded step waits for
// the device twice, after the gradients' norm and at its end, where an unguarded one waits once.
//
// `max_in_a_row` held steps in a row stop the run (limit_reached; the trainer writes a checkpoint:
// held steps changed no weight or optimizer state, so it holds the last applied update's). The
// window and counts are in every checkpoint (model/checkpoint.h, SpikeGuardState), so a resumed
// run judges as the uninterrupted one does.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "model/checkpoint.h"
#include "train/train_step.h"

namespace mixgpt {

// The running statistics and the verdicts, without a model (tested alone).
class SpikeWindow {
public:
    SpikeWindow(double z, int window);

    struct Verdict {
        bool judged = false;  // past the warm-up, finite values
        bool held = false;
        double loss_limit = 0, grad_norm_limit = 0;  // mean + z sd of each, when judged
    };
    // Judges a step and records it: an applied step enters the window.
    Verdict judge(double loss, double grad_norm);

    int64_t skips() const { return skips_; }
    int64_t skips_in_a_row() const { return skips_in_a_row_; }
    SpikeGuardState state() const;
    // A state of a run with another window keeps its newest `window` values.
    void restore(const SpikeGuardState& state);

private:
    double z_;
    size_t window_;
    std::deque<double> losses_, grad_norms_;  // oldest first
    int64_t skips_ = 0, skips_in_a_row_ = 0;
};

class SpikeGuard {
public:
    // z = 0: off (finish() is TrainStep::finish and result()).
    SpikeGuard(double z, int window, int max_in_a_row);
    bool enabled() const { return window_.has_value(); }

    // Finishes the step numbered `step` (1-based): with the guard, the update is applied unless the
    // step is held, which logs one line.
    StepResult finish(TrainStep& train_step, const AdamWHyper& hyper, double schedule_factor, int64_t step);

    bool last_held() const { return last_held_; }
    int64_t skips() const { return window_ ? window_->skips() : 0; }
    // At `max_in_a_row` held steps in a row, after step `step`: calls save_checkpoint (which
    // returns the path written) and throws Error naming the limit and that checkpoint.
    void stop_at_limit(int64_t step, const std::function<std::string()>& save_checkpoint) const;

    std::optional<SpikeGuardState> state() const;
    // A checkpoint without a state (the guard was off) starts a new warm-up; with the guard off the
    // state is left out.
    void restore(const std::optional<SpikeGuardState>& state);

private:
    std::optional<SpikeWindow> window_;
    int max_in_a_row_;
    bool last_held_ = false;
};

}  // namespace mixgpt
