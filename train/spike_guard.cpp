#include "train/spike_guard.h"

#include <cmath>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

// Mean + z population standard deviations of `values`, summed in order: the same double on every
// rank and after a resume.
double limit_of(const std::deque<double>& values, double z) {
    double sum = 0;
    for (double value : values) sum += value;
    const double mean = sum / static_cast<double>(values.size());
    double squares = 0;
    for (double value : values) squares += (value - mean) * (value - mean);
    return mean + z * std::sqrt(squares / static_cast<double>(values.size()));
}

void keep_newest(std::deque<double>& values, size_t count) {
    while (values.size() > count) values.pop_front();
}

}  // namespace

SpikeWindow::SpikeWindow(double z, int window) : z_(z), window_(static_cast<size_t>(window)) {}

SpikeWindow::Verdict SpikeWindow::judge(double loss, double grad_norm) {
    Verdict verdict;
    if (!std::isfinite(loss) || !std::isfinite(grad_norm)) return verdict;
    if (losses_.size() == window_) {
        verdict.judged = true;
        verdict.loss_limit = limit_of(losses_, z_);
        verdict.grad_norm_limit = limit_of(grad_norms_, z_);
        verdict.held = loss > verdict.loss_limit || grad_norm > verdict.grad_norm_limit;
    }
    if (verdict.held) {
        ++skips_;
        ++skips_in_a_row_;
        return verdict;
    }
    skips_in_a_row_ = 0;
    losses_.push_back(loss);
    grad_norms_.push_back(grad_norm);
    keep_newest(losses_, window_);
    keep_newest(grad_norms_, window_);
    return verdict;
}

SpikeGuardState SpikeWindow::state() const {
    SpikeGuardState state;
    state.losses.assign(losses_.begin(), losses_.end());
    state.grad_norms.assign(grad_norms_.begin(), grad_norms_.end());
    state.skips = skips_;
    state.skips_in_a_row = skips_in_a_row_;
    return state;
}

void SpikeWindow::restore(const SpikeGuardState& state) {
    losses_.assign(state.losses.begin(), state.losses.end());
    grad_norms_.assign(state.grad_norms.begin(), state.grad_norms.end());
    keep_newest(losses_, window_);
    keep_newest(grad_norms_, window_);
    skips_ = state.skips;
    skips_in_a_row_ = state.skips_in_a_row;
}

SpikeGuard::SpikeGuard(double z, int window, int max_in_a_row) : max_in_a_row_(max_in_a_row) {
    if (z > 0) window_.emplace(z, window);
}

StepResult SpikeGuard::finish(TrainStep& train_step, const AdamWHyper& hyper, double schedule_factor,
                              int64_t step) {
    last_held_ = false;
    if (!window_) {
        train_step.finish(hyper, schedule_factor);
        return train_step.result();
    }
    train_step.finish_gradients();
    const StepResult gradients = train_step.gradient_result();
    const double grad_norm = std::sqrt(static_cast<double>(gradients.status.grad_norm_squared)) /
                             static_cast<double>(gradients.status.loss_scale);
    const SpikeWindow::Verdict verdict = window_->judge(gradients.loss, grad_norm);
    last_held_ = verdict.held;
    if (!verdict.held) {
        train_step.apply_update(hyper, schedule_factor);
        return train_step.result();
    }
    train_step.hold_update();
    log_warning(format(
        "step %lld: loss spike, update held: loss %.4f (limit %.4f), gradient norm %.4g "
        "(limit %.4g); %lld held so far, %lld in a row",
        static_cast<long long>(step), gradients.loss, verdict.loss_limit, grad_norm, verdict.grad_norm_limit,
        static_cast<long long>(window_->skips()), static_cast<long long>(window_->skips_in_a_row())));
    return train_step.result();
}

void SpikeGuard::stop_at_limit(int64_t step, const std::function<std::string()>& save_checkpoint) const {
    if (!window_ || window_->skips_in_a_row() < max_in_a_row_) return;
    const std::string checkpoint = save_checkpoint();
    throw Error(
        format("training stopped at step %lld: --max-spike-skips %d reached (the loss-spike guard held "
               "%lld steps in a row); %s holds the last applied update, with the data position after "
               "the held steps: resume from it with a lower --lr, or a larger --skip-spikes or "
               "--max-spike-skips",
               static_cast<long long>(step), max_in_a_row_, static_cast<long long>(window_->skips_in_a_row()),
               checkpoint.c_str()));
}

std::optional<SpikeGuardState> SpikeGuard::state() const {
    if (!window_) return std::nullopt;
    return window_->state();
}

void SpikeGuard::restore(const std::optional<SpikeGuardState>& state) {
    if (!window_) return;
    if (!state) {
        log_info(
            "spike guard: the checkpoint has no statistics (the guard was off): a new warm-up of "
            "--spike-window steps");
        return;
    }
    window_->restore(*state);
}

}  // namespace mixgpt
