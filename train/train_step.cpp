#include "train/train_step.h"

#include <algorithm>
#include <cstddef>

#include "core/error.h"

namespace mixgpt {
namespace {

char* at(const Buffer& buffer, size_t offset) { return static_cast<char*>(buffer.data()) + offset; }

// The gradient buckets of a model: under ZeRO-1 on a grid of shard_granule(W) elements of the
// padded arena, so that every bucket range splits into W equal, aligned pieces.
std::vector<GradientBucket> plan_model_buckets(const ParameterLayout& layout, int n_layer, int world_size,
                                               bool sharded, size_t bucket_bytes) {
    const std::vector<std::vector<ElementRange>> stages =
        stage_ranges(layout, gradient_stages(layout, n_layer));
    if (!sharded)
        return plan_gradient_buckets(stages,
                                     bucket_capacity(sizeof(float), bucket_bytes, ShardLayout::kAlignment));
    const int64_t granule = shard_granule(world_size);
    return plan_gradient_buckets(
        align_stage_ranges(stages, granule, padded_elements(layout.total(), world_size)),
        bucket_capacity(sizeof(float), bucket_bytes, granule));
}

ShardLayout layout_of_buckets(const std::vector<GradientBucket>& buckets, int64_t elements, int world_size) {
    std::vector<ElementRange> units;
    for (const GradientBucket& bucket : buckets)
        units.insert(units.end(), bucket.ranges.begin(), bucket.ranges.end());
    return ShardLayout(std::move(units), elements, world_size);
}

}  // namespace

uint64_t step_seed(uint64_t seed, int64_t step) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(step + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

RankPieces TrainStep::zero_pieces(const GPTConfig& config, int world_size, size_t bucket_bytes, bool muon) {
    if (muon) return MuonZeroLayout(config, world_size).pieces();
    const ParameterLayout layout(config);
    return layout_of_buckets(plan_model_buckets(layout, config.n_layer, world_size, true, bucket_bytes),
                             layout.total(), world_size)
        .rank_pieces();
}

ShardSizes TrainStep::zero_sizes(const GPTConfig& config, int world_size, size_t bucket_bytes, bool muon) {
    const RankPieces pieces = zero_pieces(config, world_size, bucket_bytes, muon);
    const std::vector<int64_t> sizes = pieces.shard_sizes();
    return {*std::max_element(sizes.begin(), sizes.end()), pieces.arena_elements(),
            muon ? MuonZeroLayout(config, world_size).staging_elements() : 0};
}

ParameterSharding TrainStep::sharding(const GPTConfig& config, const Communicator& communicator,
                                      const DataParallelConfig& parallel, bool muon) {
    if (!parallel.shard_optimizer) return {};
    const RankPieces pieces = zero_pieces(config, communicator.world_size(), parallel.bucket_bytes, muon);
    return {pieces.arena_elements(), pieces.pieces(communicator.rank())};
}

TrainStep::TrainStep(GPT& model, Communicator& communicator, int accumulation_steps,
                     const LossScaleConfig& loss_scale, const StepStatus& initial_status,
                     const DataParallelConfig& parallel, const std::optional<MuonPlan>& muon)
    : backend_(model.backend()),
      model_(model),
      communicator_(communicator),
      accumulation_steps_(accumulation_steps),
      loss_scale_(loss_scale),
      parallel_(parallel),
      muon_(muon) {
    MIXGPT_REQUIRE(accumulation_steps >= 1, "accumulation steps must be at least 1");
    MIXGPT_REQUIRE(parallel.bucket_bytes > 0, "bucket size must be positive");
    const int64_t n = model.layout().total();
    const int n_layer = model.config().n_layer;
    last_stage_ = n_layer + 1;
    const int rank = communicator.rank(), world_size = communicator.world_size();
    if (sharded() && muon_) {
        // Muon's matrices whole on their owners, exchanged after the backward pass (muon_zero_exchange.h).
        muon_zero_ = std::make_unique<MuonZeroExchange>(backend_, communicator,
                                                        MuonZeroLayout(model.config(), world_size));
        shards_.emplace(muon_zero_->layout().pieces());
    } else {
        gradient_buckets_ =
            plan_model_buckets(model.layout(), n_layer, world_size, sharded(), parallel.bucket_bytes);
        if (sharded()) shards_.emplace(layout_of_buckets(gradient_buckets_, n, world_size).rank_pieces());
    }
    if (sharded()) {
        pieces_ = shards_->pieces(rank);
        MIXGPT_REQUIRE(
            model.master_pieces() == pieces_ && model.arena_elements() == shards_->arena_elements(),
            "train step: ZeRO-1 needs a model made with TrainStep::sharding for this rank");
        kept_elements_ = shards_->shard_elements(rank);
        for (const ElementRange& piece : pieces_)
            if (piece.begin < n) owned_.push_back({piece.begin, std::min(piece.end, n)});
        shard_gradients_ = backend_.allocate(static_cast<size_t>(kept_elements_) * sizeof(float));
        const DType act = model.working_parameters().dtype;
        if (act != DType::f32)
            shard_working_ = backend_.allocate(static_cast<size_t>(kept_elements_) * dtype_size(act));
    } else {
        MIXGPT_REQUIRE(model.keeps_all_masters(),
                       "train step: a model keeping a shard's masters needs ZeRO-1");
        kept_elements_ = n;
        owned_ = {{0, n}};
    }
    // At least one element each, so that an empty model still has valid (unused) pointers.
    const size_t moment_bytes = static_cast<size_t>(std::max<int64_t>(kept_elements_, 1)) * sizeof(float);
    m_ = backend_.allocate(moment_bytes);
    v_ = backend_.allocate(moment_bytes);
    backend_.fill_zero(m_.data(), m_.bytes());
    backend_.fill_zero(v_.data(), v_.bytes());
    if (muon_) {
        groups_ = muon_zero_ ? muon_zero_->layout().shard_groups(rank)
                             : muon_parameter_groups(model.config(), model.layout());
        MIXGPT_REQUIRE(!groups_.adamw.empty(),
                       "zero: too many ranks for this model's AdamW parameters under --optimizer muon");
        muon_step_ = std::make_unique<MuonStep>(backend_, groups_.muon, muon_->hyper.ns_dtype);
    }
    status_ = backend_.allocate(sizeof(StepStatus));
    write_status(initial_status);
    const size_t tokens = static_cast<size_t>(model.batch_size()) * static_cast<size_t>(model.seq_len());
    const size_t kinds = model.z_loss() > 0 ? 2 : 1;  // the losses, and the z-loss terms
    step_losses_ =
        backend_.allocate(kinds * static_cast<size_t>(accumulation_steps) * tokens * sizeof(float));
    host_losses_.resize(kinds * static_cast<size_t>(accumulation_steps) * tokens);
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
    if (last && parallel_.overlap && !muon_zero_)
        ready = [this](int stage) { exchange_ready_buckets(stage); };
    const TensorView losses = model_.forward_backward(batch.inputs(), batch.targets(), gradient_scale,
                                                      status_pointer(), ready);  // (B, T) f32
    if (last && muon_zero_)
        muon_zero_->reduce_gradients(model_.gradient_arena());
    else if (last)
        exchange_ready_buckets(last_stage_);
    char* slot =
        static_cast<char*>(step_losses_.data()) + static_cast<size_t>(next_micro_step_) * losses.bytes();
    backend_.copy_within(slot, losses.data, losses.bytes());
    if (model_.z_loss() > 0)
        backend_.copy_within(slot + host_losses_.size() / 2 * sizeof(float), model_.z_losses().data,
                             losses.bytes());
    ++next_micro_step_;
}

void TrainStep::finish(const AdamWHyper& hyper, double schedule_factor) {
    finish_gradients();
    apply_update(hyper, schedule_factor);
}

void TrainStep::finish_gradients() {
    MIXGPT_REQUIRE(next_micro_step_ == accumulation_steps_,
                   "train step: finished before all micro-steps ran");
    communicator_.join();
    if (sharded())
        shard_gradient_norm();
    else
        backend_.grad_norm_squared(status_pointer(), model_.gradients());
}

StepResult TrainStep::gradient_result() {
    communicator_.wait();
    read_losses();
    losses_read_ = true;
    return {loss_, z_loss_, read_status()};
}

void TrainStep::apply_update(const AdamWHyper& hyper, double schedule_factor) {
    if (sharded()) {
        update_shard(hyper, schedule_factor);
        return;
    }
    const TensorView gradients = model_.gradients();  // (n) f32
    if (muon_) {
        const TensorView working =
            model_.working_parameters().dtype != DType::f32 ? model_.working_parameters() : TensorView();
        update_muon_groups(model_.master_parameters(), gradients, working, hyper, schedule_factor);
        backend_.update_loss_scale(status_pointer(), loss_scale_);
        update_fp8_scaling();
        return;
    }
    const TensorView working = model_.working_parameters();
    const bool separate_working = working.dtype != DType::f32;
    backend_.adamw_step(model_.master_parameters(), gradients, kept_view(m_, DType::f32),
                        kept_view(v_, DType::f32), separate_working ? working : TensorView(),
                        model_.layout().decay_count(), hyper, status_pointer());
    backend_.update_loss_scale(status_pointer(), loss_scale_);
    update_fp8_scaling();
}

void TrainStep::hold_update() { update_fp8_scaling(); }

void TrainStep::update_muon_groups(const TensorView& masters, const TensorView& gradients,
                                   const TensorView& working, const AdamWHyper& hyper,
                                   double schedule_factor) {
    const TensorView m = kept_view(m_, DType::f32), v = kept_view(v_, DType::f32);
    for (size_t k = 0; k < groups_.adamw.size(); ++k) {
        const AdamWGroup& group = groups_.adamw[k];
        const ElementRange range{group.begin, group.end};
        const float peak = group.rate == AdamWRate::embedding ? muon_->embedding_lr
                           : group.rate == AdamWRate::head    ? muon_->head_lr
                                                              : muon_->base_lr;
        AdamWHyper group_hyper = hyper;
        group_hyper.learning_rate = static_cast<float>(peak * schedule_factor);
        group_hyper.count_step = k + 1 == groups_.adamw.size();
        backend_.adamw_step(slice_elements(masters, range), slice_elements(gradients, range),
                            slice_elements(m, range), slice_elements(v, range),
                            working.valid() ? slice_elements(working, range) : TensorView(),
                            group.decay ? range.count() : 0, group_hyper, status_pointer());
    }
    MuonHyper muon_hyper = muon_->hyper;
    muon_hyper.learning_rate = static_cast<float>(muon_->hyper.learning_rate * schedule_factor);
    muon_hyper.stochastic_rounding = hyper.stochastic_rounding;
    muon_hyper.seed = hyper.seed;
    muon_step_->step(masters, gradients, m, working, muon_hyper, status_pointer());
}

// Delayed scaling: every rank's newest amaxes become their maximum over the ranks (the older
// history entries are already equal everywhere), as Transformer Engine reduces amaxes over the
// data-parallel group; then every rank computes the same scales, and the checkpoint's state,
// which is rank 0's, is every rank's.
void TrainStep::update_fp8_scaling() {
    Fp8Linears* fp8 = model_.fp8();
    if (fp8 == nullptr) return;
    if (communicator_.world_size() > 1) {
        for (const TensorView& history : fp8->amax_histories())
            communicator_.all_reduce(history, Reduction::max);
        communicator_.join();
    }
    fp8->step_done();
}

void TrainStep::exchange_ready_buckets(int stage) {
    const TensorView gradients = model_.gradient_arena();  // (arena) f32
    for (; buckets_started_ < gradient_buckets_.size(); ++buckets_started_) {
        const GradientBucket& bucket = gradient_buckets_[buckets_started_];
        if (bucket.ready_stage > stage) break;
        for (const ElementRange& range : bucket.ranges) {
            if (sharded())
                communicator_.reduce_scatter_mean(slice_elements(gradients, range));
            else
                communicator_.all_reduce(slice_elements(gradients, range), Reduction::mean);
        }
    }
}

void TrainStep::shard_gradient_norm() {
    const TensorView gradients = kept_view(shard_gradients_, DType::f32);  // (shard) f32
    copy_pieces(gradients, model_.gradient_arena(), true);
    backend_.grad_norm_squared(status_pointer(), gradients);
    make_norm_global();
}

void TrainStep::update_shard(const AdamWHyper& hyper, double schedule_factor) {
    const TensorView gradients = kept_view(shard_gradients_, DType::f32);  // (shard) f32
    const TensorView masters = model_.master_parameters();                 // (shard) f32
    const DType act = model_.working_parameters().dtype;
    // A skipped update leaves the working copy as it is: start from the pieces' current one.
    const TensorView working = act == DType::f32 ? TensorView() : kept_view(shard_working_, act);
    if (working.valid()) copy_pieces(working, model_.working_arena(), true);
    const int rank = communicator_.rank();
    AdamWHyper shard_hyper = hyper;
    // Stochastic rounding draws from (seed, index within the shard): another stream per shard.
    shard_hyper.seed ^= static_cast<uint64_t>(rank * kept_elements_) * 0x9e3779b97f4a7c15ull;
    if (muon_)
        update_muon_groups(masters, gradients, working, shard_hyper, schedule_factor);
    else
        backend_.adamw_step(masters, gradients, kept_view(m_, DType::f32), kept_view(v_, DType::f32), working,
                            shards_->shard_count_below(rank, model_.layout().decay_count()), shard_hyper,
                            status_pointer());
    backend_.update_loss_scale(status_pointer(), loss_scale_);
    update_fp8_scaling();
    gather_working_copy(working.valid() ? working : masters);
}

// status.grad_norm_squared holds this rank's shard's sum of squares: all-reduce it into the
// global sum, then decide skip from that sum on the backend, identically on every rank.
void TrainStep::make_norm_global() {
    char* norm = at(status_, offsetof(StepStatus, grad_norm_squared));
    communicator_.all_reduce(TensorView(norm, DType::f32, {1}), Reduction::sum);
    communicator_.join();
    backend_.decide_skip(status_pointer());
}

void TrainStep::copy_pieces(const TensorView& shard, const TensorView& arena, bool into_shard) {
    int64_t stored = 0;
    for (const ElementRange& piece : pieces_) {
        const TensorView in_arena = slice_elements(arena, piece);
        const TensorView in_shard = slice_elements(shard, {stored, stored + piece.count()});
        if (into_shard)
            backend_.copy_within(in_shard.data, in_arena.data, in_arena.bytes());
        else
            backend_.copy_within(in_arena.data, in_shard.data, in_arena.bytes());
        stored += piece.count();
    }
}

void TrainStep::gather_working_copy(const TensorView& shard_working) {
    const TensorView arena = model_.working_arena();  // (arena) act
    copy_pieces(shard_working, arena, false);
    if (muon_zero_) muon_zero_->gather_working(arena);
    for (const GradientBucket& bucket : gradient_buckets_)
        for (const ElementRange& range : bucket.ranges)
            communicator_.all_gather(slice_elements(arena, range));
    communicator_.join();
}

void TrainStep::read_losses() {
    backend_.copy_to_host(host_losses_.data(), step_losses_.data(), host_losses_.size() * sizeof(float));
    const size_t count = host_losses_.size() / (model_.z_loss() > 0 ? 2 : 1);  // k * B * T
    double sums[2] = {0, 0};                                                   // losses, z-loss terms
    for (size_t i = 0; i < host_losses_.size(); ++i) sums[i / count] += host_losses_[i];
    communicator_.all_reduce_sum_host(sums, 2);
    loss_ = sums[0] / (static_cast<double>(count) * communicator_.world_size());
    z_loss_ = sums[1] / (static_cast<double>(count) * communicator_.world_size());
}

StepResult TrainStep::result() {
    communicator_.wait();
    if (!losses_read_) read_losses();
    losses_read_ = false;
    return {loss_, z_loss_, read_status()};
}

TensorView TrainStep::kept_gradients() const {
    return sharded() ? kept_view(shard_gradients_, DType::f32) : model_.gradients();
}

TensorView TrainStep::kept_view(const Buffer& buffer, DType dtype) const {
    return TensorView(buffer.data(), dtype, {kept_elements_});
}

OptimizerMoments TrainStep::download_moments() const {
    const size_t count = static_cast<size_t>(kept_elements_);
    OptimizerMoments moments{std::vector<float>(count), std::vector<float>(count)};
    backend_.copy_to_host(moments.m.data(), m_.data(), count * sizeof(float));
    backend_.copy_to_host(moments.v.data(), v_.data(), count * sizeof(float));
    return moments;
}

void TrainStep::upload_moments(const OptimizerMoments& moments) {
    const size_t n = static_cast<size_t>(model_.layout().total());
    MIXGPT_REQUIRE(moments.m.size() == n && moments.v.size() == n,
                   "optimizer moments do not match the parameter count");
    const size_t bytes = static_cast<size_t>(kept_elements_) * sizeof(float);
    if (!sharded()) {
        backend_.copy_to_backend(m_.data(), moments.m.data(), bytes);
        backend_.copy_to_backend(v_.data(), moments.v.data(), bytes);
        return;
    }
    const int rank = communicator_.rank();
    backend_.copy_to_backend(m_.data(), shards_->shard_of(moments.m, rank).data(), bytes);
    backend_.copy_to_backend(v_.data(), shards_->shard_of(moments.v, rank).data(), bytes);
}

std::vector<float> TrainStep::gather_kept(const TensorView& kept, int root) {
    const bool is_root = communicator_.rank() == root;
    if (!sharded() && !is_root) return {};
    std::vector<float> part(static_cast<size_t>(kept_elements_));
    backend_.copy_to_host(part.data(), kept.data, part.size() * sizeof(float));
    if (!sharded()) return part;
    int64_t total = 0;
    for (int64_t size : shards_->shard_sizes()) total += size;
    std::vector<float> shards(is_root ? static_cast<size_t>(total) : 0);
    communicator_.gather_host(part.data(), shards.data(), shards_->shard_sizes(), root);
    return is_root ? shards_->arena_of(shards) : std::vector<float>();
}

std::vector<float> TrainStep::gather_masters(int root) {
    return gather_kept(model_.master_parameters(), root);
}

OptimizerMoments TrainStep::gather_moments(int root) {
    OptimizerMoments moments;
    moments.m = gather_kept(kept_view(m_, DType::f32), root);
    moments.v = gather_kept(kept_view(v_, DType::f32), root);
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
