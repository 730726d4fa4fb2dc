// One optimizer step on the backend, in the order the backend can run without host decisions:
//
//   zero the gradient arena
//   k micro-steps: forward + backward, gradients += d(sum of losses / (B*T*k) * loss_scale)
//   communicator.all_reduce_mean(gradients)        (the gradients are final here)
//   grad_norm_squared -> StepStatus.skip when any gradient is Inf/NaN
//   adamw_step (skipped on the backend when StepStatus.skip), working copy refreshed
//   update_loss_scale
//
// The AdamW moments m, v are fp32 arenas in backend memory, laid out like the parameters; the
// StepStatus lives in backend memory too. result() copies the status and the step's losses to
// the host once, after the whole step is enqueued.
#pragma once

#include <cstdint>
#include <vector>

#include "core/memory.h"
#include "eval/token_batch.h"
#include "kernels/ops.h"
#include "model/gpt.h"
#include "train/communicator.h"

namespace mixgpt {

struct OptimizerMoments {
    std::vector<float> m, v;  // (n) f32 each, in ParameterLayout order
};

struct StepResult {
    double loss = 0;    // mean loss over this rank's tokens of the step
    StepStatus status;  // after the step
};

class TrainStep {
public:
    TrainStep(GPT& model, Communicator& communicator, int accumulation_steps,
              const LossScaleConfig& loss_scale, const StepStatus& initial_status);

    int accumulation_steps() const { return accumulation_steps_; }

    // The three phases of a step; micro_step is called accumulation_steps times in between.
    void begin();
    void micro_step(const int32_t* windows);  // (B, T+1) host tokens
    // All-reduce, norm, AdamW with hyper.learning_rate and hyper.seed as given, loss scale.
    void finish(const AdamWHyper& hyper);
    // Waits for the step and reads its status and mean loss.
    StepResult result();

    // Optimizer state for checkpoints, to and from the host.
    OptimizerMoments download_moments() const;
    void upload_moments(const OptimizerMoments& moments);
    StepStatus read_status() const;
    void write_status(const StepStatus& status);

private:
    TensorView arena_view(const Buffer& arena) const;  // (n) f32
    StepStatus* status_pointer() const { return status_.as<StepStatus>(); }

    Backend& backend_;
    GPT& model_;
    Communicator& communicator_;
    int accumulation_steps_;
    LossScaleConfig loss_scale_;
    Buffer m_, v_, status_;
    Buffer step_losses_;               // (k, B, T) f32, backend memory
    std::vector<TokenBatch> batches_;  // one per micro-step, so no upload overwrites one in flight
    std::vector<float> host_losses_;   // (k, B, T)
    int next_micro_step_ = 0;
};

}  // namespace mixgpt
