// One optimizer step on the backend, in the order the backend can run without host decisions:
//
//   zero the gradient arena
//   k micro-steps: forward + backward, gradients += d(sum of losses / (B*T*k) * loss_scale)
//     the last one exchanges the gradients between ranks, bucket by bucket, each as soon as the
//     backward pass has completed its gradients (dist/gradient_buckets.h); no communication in
//     the micro-steps before
//   join the collectives (the backend waits for them; the host does not)
//   grad_norm_squared -> StepStatus.skip when any gradient is Inf/NaN
//   adamw_step (skipped on the backend when StepStatus.skip), working copy refreshed
//   update_loss_scale
//
// With Muon (MuonPlan): adamw_step once per AdamW group of train/parameter_groups.h at its own rate
// (the last call counts the step), then MuonStep on the hidden matrices, whose momentum lives in m
// at their elements (train/muon_step.h). Under ZeRO-1 the rank keeps whole Muon matrices and a
// block of the AdamW elements (train/muon_zero_layout.h): the gradients reach their owners and the
// new working copy every rank through staged collectives after the backward pass
// (train/muon_zero_exchange.h), and the same updates run on the rank's shard.
//
// Data parallelism (W ranks, each with its own micro-batches):
// - replicated optimizer (default): the gradient arena is all-reduced (mean, fp32) in buckets
//   of DataParallelConfig::bucket_bytes; then every rank runs the same norm and update on
//   identical data.
// - sharded optimizer (ZeRO stage 1, dist/shard_layout.h): the arena is padded so that every
//   bucket range splits into W equal pieces, and each is reduce-scattered in place instead
//   (ncclReduceScatter), leaving rank r the mean gradients of its piece. The rank copies its
//   pieces into its shard (one contiguous array), where it keeps the fp32 masters (the model,
//   made with sharding(), holds those of its pieces only) and the AdamW moments; it takes the
//   global norm, runs AdamW on the shard, copies the shard's new working copy into its pieces
//   of the working arena and all-gathers every range (ncclAllGather). The global gradient norm
//   is the sum of the shards' squared norms and the skip decision follows from it, identically
//   on every rank (make_norm_global). gather_masters and gather_moments return them in arena
//   order, without the padding.
//
// The AdamW moments m, v are fp32 arrays in backend memory laid out like the parameters (or like
// the shard); the StepStatus lives in backend memory too. Collectives are always issued, also on
// one rank (a no-op there unless the communicator is MPI or NCCL: `mpirun -np 1` exercises the
// whole path). Nothing before result() blocks the host: result() waits for the collectives
// (under the collective timeout) and copies the status and the step's losses to the host once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/memory.h"
#include "dist/communicator.h"
#include "dist/gradient_buckets.h"
#include "dist/rank_pieces.h"
#include "dist/shard_layout.h"
#include "kernels/ops.h"
#include "model/gpt.h"
#include "model/memory_plan.h"
#include "model/token_batch.h"
#include "train/muon_step.h"
#include "train/muon_zero_exchange.h"
#include "train/parameter_groups.h"

namespace mixgpt {

// splitmix64 of (seed, step): the stochastic-rounding seed of one step (AdamWHyper::seed).
uint64_t step_seed(uint64_t seed, int64_t step);

struct DataParallelConfig {
    bool shard_optimizer = false;            // ZeRO stage 1
    size_t bucket_bytes = size_t{25} << 20;  // per gradient collective
    // Each bucket's collective starts during the last backward pass, once its gradients are
    // final (true), or all of them after it (false: the baseline overlap is measured against).
    bool overlap = true;
};

struct OptimizerMoments {
    std::vector<float> m, v;  // f32 each, in ParameterLayout order (or in a shard's order)
};

struct StepResult {
    double loss = 0;    // mean loss over every rank's tokens of the step (the cross-entropy alone)
    double z_loss = 0;  // mean z-loss term over the same tokens (GPT::set_z_loss; 0 when off)
    StepStatus status;  // after the step
};

class TrainStep {
public:
    // The model keeps every fp32 master, or (ZeRO-1) was made with sharding(...) for this rank.
    TrainStep(GPT& model, Communicator& communicator, int accumulation_steps,
              const LossScaleConfig& loss_scale, const StepStatus& initial_status,
              const DataParallelConfig& parallel = {}, const std::optional<MuonPlan>& muon = std::nullopt);

    // How the model must lay out its parameters on this rank: ZeRO-1's padded arena and pieces (muon:
    // those of train/muon_zero_layout.h), or the default.
    static ParameterSharding sharding(const GPTConfig& config, const Communicator& communicator,
                                      const DataParallelConfig& parallel, bool muon = false);
    // ZeRO-1's pieces of a model's arena between world_size ranks, for buckets of bucket_bytes (not
    // read under muon).
    static RankPieces zero_pieces(const GPTConfig& config, int world_size, size_t bucket_bytes, bool muon);
    // The memory plan's sizes of the same: the largest shard, the arena, Muon's staging.
    static ShardSizes zero_sizes(const GPTConfig& config, int world_size, size_t bucket_bytes, bool muon);

    int accumulation_steps() const { return accumulation_steps_; }
    bool sharded() const { return parallel_.shard_optimizer; }
    // The parameters whose optimizer state this rank keeps, ascending: its pieces (without the
    // padding), or all of them.
    const std::vector<ElementRange>& owned() const { return owned_; }
    // After the gradients are finished: the mean gradients of the masters the model keeps, in their
    // order: (n) f32, the model's gradients, or under ZeRO-1 (the shard's elements) f32.
    TensorView kept_gradients() const;

    // The three phases of a step; micro_step is called accumulation_steps times in between.
    void begin();
    void micro_step(const int32_t* windows);  // (B, T+1) host tokens
    // Gradient exchange, norm, AdamW with hyper.learning_rate and hyper.seed as given, loss scale.
    // With Muon every group's peak rate is multiplied by schedule_factor (the schedule at this step
    // over its peak) and hyper.learning_rate is not read.
    void finish(const AdamWHyper& hyper, double schedule_factor = 1.0);
    // Waits for the step and reads its status and mean loss (a collective: every rank calls it).
    StepResult result();

    // finish() in two halves, for a decision on the host between them (train/spike_guard.h):
    // finish_gradients() exchanges the gradients and takes their norm (StepStatus.skip when it is
    // not finite); gradient_result() waits for that and reads the step's mean loss and status
    // before the update, a host synchronisation that finish() does not make (a collective); then
    // apply_update() does the rest of finish(), or hold_update() holds the update back: weights,
    // optimizer state and loss scale stay as they are, and only fp8's delayed scaling takes the
    // step's amaxes into its history, as it does on a step skipped for non-finite gradients.
    // result() ends the step either way.
    void finish_gradients();
    StepResult gradient_result();
    void apply_update(const AdamWHyper& hyper, double schedule_factor = 1.0);
    void hold_update();

    // Optimizer state for checkpoints, to and from the host.
    OptimizerMoments download_moments() const;  // this rank's, in its shard's order (padding included)
    // The moments of every parameter (n each); this rank keeps those of owned().
    void upload_moments(const OptimizerMoments& moments);
    // Collectives: every rank calls them; root gets all n values, the others empty vectors.
    std::vector<float> gather_masters(int root);
    OptimizerMoments gather_moments(int root);
    StepStatus read_status() const;
    void write_status(const StepStatus& status);

private:
    TensorView kept_view(const Buffer& buffer, DType dtype) const;  // (kept_elements_) of dtype
    StepStatus* status_pointer() const { return status_.as<StepStatus>(); }
    // Starts the collectives of the buckets not yet started whose gradients are final after `stage`.
    void exchange_ready_buckets(int stage);
    void shard_gradient_norm();  // ZeRO-1: the pieces' mean gradients into the shard, the global norm
    void update_shard(const AdamWHyper& hyper, double schedule_factor);
    void read_losses();  // the step's mean loss and z-loss term over every rank (a collective)
    // Muon: AdamW on its groups, then Muon on the hidden matrices; masters, gradients (kept) f32 and
    // working (kept) act or invalid (fp32: the masters), in the coordinates of groups_.
    void update_muon_groups(const TensorView& masters, const TensorView& gradients, const TensorView& working,
                            const AdamWHyper& hyper, double schedule_factor);
    void make_norm_global();
    void update_fp8_scaling();
    // This rank's pieces of arena (arena_elements) to shard (kept_elements_), or back.
    void copy_pieces(const TensorView& shard, const TensorView& arena, bool into_shard);
    // The shard's working copy (kept_elements_) into this rank's pieces, then every range gathered.
    void gather_working_copy(const TensorView& shard_working);
    // kept (kept_elements_) f32 of every rank, in arena order (n) on root.
    std::vector<float> gather_kept(const TensorView& kept, int root);

    Backend& backend_;
    GPT& model_;
    Communicator& communicator_;
    int accumulation_steps_;
    LossScaleConfig loss_scale_;
    DataParallelConfig parallel_;
    std::vector<GradientBucket> gradient_buckets_;  // of the f32 gradient arena, in completion order
    size_t buckets_started_ = 0;                    // in this step
    int last_stage_ = 0;                            // of the backward pass
    std::optional<RankPieces> shards_;              // ZeRO-1's
    std::vector<ElementRange> pieces_;              // ZeRO-1: this rank's, padding included
    std::vector<ElementRange> owned_;
    int64_t kept_elements_ = 0;  // optimizer state per rank: the shard, or n
    Buffer m_, v_;
    Buffer shard_gradients_;           // ZeRO-1: (kept_elements_) f32, the mean gradients of the pieces
    Buffer shard_working_;             // ZeRO-1 in bf16/fp16: (kept_elements_) act, the pieces' working copy
    Buffer status_;                    // the StepStatus, in backend memory
    Buffer step_losses_;               // (k, B, T) f32, backend memory; (2, k, B, T) under a z-loss:
                                       // the losses, then the z-loss terms
    std::vector<TokenBatch> batches_;  // one per micro-step, so no upload overwrites one in flight
    std::vector<float> host_losses_;   // as step_losses_
    double loss_ = 0, z_loss_ = 0;     // read_losses()'s, of the step in progress
    bool losses_read_ = false;         // by gradient_result(), before result()
    int next_micro_step_ = 0;

    std::optional<MuonPlan> muon_;
    ParameterGroups groups_;               // Muon's and AdamW's (muon_ only), in the arena or the shard
    std::unique_ptr<MuonStep> muon_step_;  // muon_ only
    std::unique_ptr<MuonZeroExchange> muon_zero_;  // muon_ under ZeRO-1 only
};

}  // namespace mixgpt
