#include "train/train_step.h"

#include "core/error.h"

namespace mixgpt {

TrainStep::TrainStep(GPT& model, Communicator& communicator, int accumulation_steps,
                     const LossScaleConfig& loss_scale, const StepStatus& initial_status)
    : backend_(model.backend()),
      model_(model),
      communicator_(communicator),
      accumulation_steps_(accumulation_steps),
      loss_scale_(loss_scale) {
    MIXGPT_REQUIRE(accumulation_steps >= 1, "accumulation steps must be at least 1");
    const size_t arena_bytes = static_cast<size_t>(model.layout().total()) * sizeof(float);
    m_ = backend_.allocate(arena_bytes);
    v_ = backend_.allocate(arena_bytes);
    status_ = backend_.allocate(sizeof(StepStatus));
    write_status(initial_status);
    const size_t tokens = static_cast<size_t>(model.batch_size()) * static_cast<size_t>(model.seq_len());
    step_losses_ = backend_.allocate(static_cast<size_t>(accumulation_steps) * tokens * sizeof(float));
    host_losses_.resize(static_cast<size_t>(accumulation_steps) * tokens);
    batches_.reserve(static_cast<size_t>(accumulation_steps));
    for (int i = 0; i < accumulation_steps; ++i)
        batches_.emplace_back(backend_, model.batch_size(), model.seq_len());
}

void TrainStep::begin() {
    model_.zero_gradients();
    next_micro_step_ = 0;
}

void TrainStep::micro_step(const int32_t* windows) {
    MIXGPT_REQUIRE(next_micro_step_ < accumulation_steps_,
                   "train step: more micro-steps than accumulation steps");
    TokenBatch& batch = batches_[static_cast<size_t>(next_micro_step_)];
    batch.upload(windows);
    const float gradient_scale = 1.f / static_cast<float>(static_cast<int64_t>(model_.batch_size()) *
                                                          model_.seq_len() * accumulation_steps_);
    const TensorView losses = model_.forward_backward(batch.inputs(), batch.targets(), gradient_scale,
                                                      status_pointer());  // (B, T) f32
    char* slot =
        static_cast<char*>(step_losses_.data()) + static_cast<size_t>(next_micro_step_) * losses.bytes();
    backend_.copy_within(slot, losses.data, losses.bytes());
    ++next_micro_step_;
}

void TrainStep::finish(const AdamWHyper& hyper) {
    MIXGPT_REQUIRE(next_micro_step_ == accumulation_steps_,
                   "train step: finished before all micro-steps ran");
    const TensorView gradients = model_.gradients();
    communicator_.all_reduce_mean(gradients);
    backend_.grad_norm_squared(status_pointer(), gradients);
    const TensorView working = model_.working_parameters();
    const bool separate_working = working.dtype != DType::f32;
    backend_.adamw_step(model_.master_parameters(), gradients, arena_view(m_), arena_view(v_),
                        separate_working ? working : TensorView(), model_.layout().decay_count(), hyper,
                        status_pointer());
    backend_.update_loss_scale(status_pointer(), loss_scale_);
}

StepResult TrainStep::result() {
    StepResult result;
    backend_.copy_to_host(host_losses_.data(), step_losses_.data(), host_losses_.size() * sizeof(float));
    double sum = 0;
    for (float loss : host_losses_) sum += loss;
    result.loss = sum / static_cast<double>(host_losses_.size());
    result.status = read_status();
    return result;
}

TensorView TrainStep::arena_view(const Buffer& arena) const {
    return TensorView(arena.data(), DType::f32, {model_.layout().total()});
}

OptimizerMoments TrainStep::download_moments() const {
    const size_t n = static_cast<size_t>(model_.layout().total());
    OptimizerMoments moments{std::vector<float>(n), std::vector<float>(n)};
    backend_.copy_to_host(moments.m.data(), m_.data(), n * sizeof(float));
    backend_.copy_to_host(moments.v.data(), v_.data(), n * sizeof(float));
    return moments;
}

void TrainStep::upload_moments(const OptimizerMoments& moments) {
    const size_t n = static_cast<size_t>(model_.layout().total());
    MIXGPT_REQUIRE(moments.m.size() == n && moments.v.size() == n,
                   "optimizer moments do not match the parameter count");
    backend_.copy_to_backend(m_.data(), moments.m.data(), n * sizeof(float));
    backend_.copy_to_backend(v_.data(), moments.v.data(), n * sizeof(float));
}

StepStatus TrainStep::read_status() const {
    StepStatus status;
    backend_.copy_to_host(&status, status_.data(), sizeof(StepStatus));
    return status;
}

void TrainStep::write_status(const StepStatus& status) {
    backend_.copy_to_backend(status_.data(), &status, sizeof(StepStatus));
}

}  // namespace mixgpt
