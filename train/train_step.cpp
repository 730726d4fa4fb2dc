#include "train/train_step.h"

#include <algorithm>
#include <cstddef>

#include "core/error.h"

namespace mixgpt {
namespace {

char* at(const Buffer& buffer, size_t offset) { return static_cast<char*>(buffer.data()) + offset; }

}  // namespace

MasterSpan TrainStep::master_span(int64_t parameters, const Communicator& communicator,
                                  const DataParallelConfig& parallel) {
    if (!parallel.shard_optimizer) return {};
    const ElementRange shard = ShardLayout(parameters, communicator.world_size()).shard(communicator.rank());
    return {shard.begin, shard.end};
}

TrainStep::TrainStep(GPT& model, Communicator& communicator, int accumulation_steps,
                     const LossScaleConfig& loss_scale, const StepStatus& initial_status,
                     const DataParallelConfig& parallel)
    : backend_(model.backend()),
      model_(model),
      communicator_(communicator),
      accumulation_steps_(accumulation_steps),
      loss_scale_(loss_scale),
      parallel_(parallel),
      shards_(model.layout().total(), parallel.shard_optimizer ? communicator.world_size() : 1),
      owned_(shards_.shard(parallel.shard_optimizer ? communicator.rank() : 0)) {
    MIXGPT_REQUIRE(accumulation_steps >= 1, "accumulation steps must be at least 1");
    MIXGPT_REQUIRE(parallel.bucket_bytes > 0, "bucket size must be positive");
    MIXGPT_REQUIRE(model.keeps_all_masters() || (sharded() && model.masters_begin() == owned_.begin &&
                                                 model.master_parameters().numel() == owned_.count()),
                   "train step: the model keeps the fp32 masters of another span than this rank's shard");
    const int64_t n = model.layout().total();
    const std::vector<std::vector<size_t>> stages = gradient_stages(model.layout(), model.config().n_layer);
    last_stage_ = static_cast<int>(stages.size()) - 1;
    gradient_buckets_ = plan_gradient_buckets(stage_ranges(model.layout(), stages),
                                              bucket_capacity(sizeof(float), parallel.bucket_bytes));
    working_buckets_ = bucket_ranges(n, dtype_size(model.working_parameters().dtype), parallel.bucket_bytes);
    // At least one element each, so that an empty shard still has valid (unused) pointers.
    const size_t moment_bytes = static_cast<size_t>(std::max<int64_t>(owned_.count(), 1)) * sizeof(float);
    m_ = backend_.allocate(moment_bytes);
    v_ = backend_.allocate(moment_bytes);
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
    buckets_started_ = 0;
}

void TrainStep::micro_step(const int32_t* windows) {
    MIXGPT_REQUIRE(next_micro_step_ < accumulation_steps_,
                   "train step: more micro-steps than accumulation steps");
    TokenBatch& batch = batches_[static_cast<size_t>(next_micro_step_)];
    batch.upload(windows);
    const float gradient_scale = 1.f / static_cast<float>(static_cast<int64_t>(model_.batch_size()) *
                                                          model_.seq_len() * accumulation_steps_);
    const bool last = next_micro_step_ + 1 == accumulation_steps_;
    GradientsReady ready;
    if (last && parallel_.overlap) ready = [this](int stage) { exchange_ready_buckets(stage); };
    const TensorView losses = model_.forward_backward(batch.inputs(), batch.targets(), gradient_scale,
                                                      status_pointer(), ready);  // (B, T) f32
    if (last) exchange_ready_buckets(last_stage_);
    char* slot =
        static_cast<char*>(step_losses_.data()) + static_cast<size_t>(next_micro_step_) * losses.bytes();
    backend_.copy_within(slot, losses.data, losses.bytes());
    ++next_micro_step_;
}

void TrainStep::finish(const AdamWHyper& hyper) {
    MIXGPT_REQUIRE(next_micro_step_ == accumulation_steps_,
                   "train step: finished before all micro-steps ran");
    const TensorView gradients = model_.gradients();  // (n) f32
    communicator_.join();
    if (sharded()) {
        update_shard(gradients, hyper);
        return;
    }
    backend_.grad_norm_squared(status_pointer(), gradients);
    const TensorView working = model_.working_parameters();
    const bool separate_working = working.dtype != DType::f32;
    backend_.adamw_step(model_.master_parameters(), gradients, moment_view(m_), moment_view(v_),
                        separate_working ? working : TensorView(), model_.layout().decay_count(), hyper,
                        status_pointer());
    backend_.update_loss_scale(status_pointer(), loss_scale_);
}

void TrainStep::exchange_ready_buckets(int stage) {
    const TensorView gradients = model_.gradients();  // (n) f32
    for (; buckets_started_ < gradient_buckets_.size(); ++buckets_started_) {
        const GradientBucket& bucket = gradient_buckets_[buckets_started_];
        if (bucket.ready_stage > stage) break;
        for (const ElementRange& range : bucket.ranges) {
            if (sharded())
                communicator_.reduce_scatter_mean(slice_elements(gradients, range),
                                                  shards_.counts_within(range));
            else
                communicator_.all_reduce(slice_elements(gradients, range), Reduction::mean);
        }
    }
}

void TrainStep::update_shard(const TensorView& gradients, const AdamWHyper& hyper) {
    const TensorView owned_gradients = slice_elements(gradients, owned_);  // (owned) f32
    backend_.grad_norm_squared(status_pointer(), owned_gradients);
    make_norm_global();

    const TensorView working = model_.working_parameters();
    const bool separate_working = working.dtype != DType::f32;
    const int64_t decay_count =
        std::clamp<int64_t>(model_.layout().decay_count() - owned_.begin, 0, owned_.count());
    AdamWHyper shard_hyper = hyper;
    // Stochastic rounding draws from (seed, index within the shard): another stream per shard.
    shard_hyper.seed ^= static_cast<uint64_t>(owned_.begin) * 0x9e3779b97f4a7c15ull;
    backend_.adamw_step(owned_masters(), owned_gradients, moment_view(m_), moment_view(v_),
                        separate_working ? slice_elements(working, owned_) : TensorView(), decay_count,
                        shard_hyper, status_pointer());
    backend_.update_loss_scale(status_pointer(), loss_scale_);
    gather_working_copy();
}

// status.grad_norm_squared holds this rank's shard's sum of squares: all-reduce it into the
// global sum, then decide skip from that sum on the backend, identically on every rank.
void TrainStep::make_norm_global() {
    char* norm = at(status_, offsetof(StepStatus, grad_norm_squared));
    communicator_.all_reduce(TensorView(norm, DType::f32, {1}), Reduction::sum);
    communicator_.join();
    backend_.decide_skip(status_pointer());
}

void TrainStep::gather_working_copy() {
    const TensorView working = model_.working_parameters();  // the masters in fp32/tf32
    for (const ElementRange& bucket : working_buckets_)
        communicator_.all_gather(slice_elements(working, bucket), shards_.counts_within(bucket));
    communicator_.join();
}

StepResult TrainStep::result() {
    StepResult result;
    communicator_.wait();
    backend_.copy_to_host(host_losses_.data(), step_losses_.data(), host_losses_.size() * sizeof(float));
    double sum = 0;
    for (float loss : host_losses_) sum += loss;
    communicator_.all_reduce_sum_host(&sum, 1);
    result.loss = sum / (static_cast<double>(host_losses_.size()) * communicator_.world_size());
    result.status = read_status();
    return result;
}

TensorView TrainStep::moment_view(const Buffer& moment) const {
    return TensorView(moment.data(), DType::f32, {owned_.count()});
}

OptimizerMoments TrainStep::download_moments() const {
    const size_t count = static_cast<size_t>(owned_.count());
    OptimizerMoments moments{std::vector<float>(count), std::vector<float>(count)};
    backend_.copy_to_host(moments.m.data(), m_.data(), count * sizeof(float));
    backend_.copy_to_host(moments.v.data(), v_.data(), count * sizeof(float));
    return moments;
}

void TrainStep::upload_moments(const OptimizerMoments& moments) {
    const size_t n = static_cast<size_t>(model_.layout().total());
    MIXGPT_REQUIRE(moments.m.size() == n && moments.v.size() == n,
                   "optimizer moments do not match the parameter count");
    const size_t bytes = static_cast<size_t>(owned_.count()) * sizeof(float);
    backend_.copy_to_backend(m_.data(), moments.m.data() + owned_.begin, bytes);
    backend_.copy_to_backend(v_.data(), moments.v.data() + owned_.begin, bytes);
}

TensorView TrainStep::owned_masters() {
    const TensorView masters = model_.master_parameters();
    return model_.keeps_all_masters() ? slice_elements(masters, owned_) : masters;
}

std::vector<float> TrainStep::gather_owned(const TensorView& owned_values, int root) {
    const bool is_root = communicator_.rank() == root;
    std::vector<float> whole(is_root ? static_cast<size_t>(model_.layout().total()) : 0);
    if (!sharded()) {
        if (is_root) backend_.copy_to_host(whole.data(), owned_values.data, whole.size() * sizeof(float));
        return whole;
    }
    std::vector<float> part(static_cast<size_t>(owned_.count()));
    backend_.copy_to_host(part.data(), owned_values.data, part.size() * sizeof(float));
    communicator_.gather_host(part.data(), whole.data(), shards_.counts_within({0, model_.layout().total()}),
                              root);
    return whole;
}

std::vector<float> TrainStep::gather_masters(int root) { return gather_owned(owned_masters(), root); }

OptimizerMoments TrainStep::gather_moments(int root) {
    OptimizerMoments moments;
    moments.m = gather_owned(moment_view(m_), root);
    moments.v = gather_owned(moment_view(v_), root);
    return moments;
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
