#include "train/memory_check.h"

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "core/log.h"
#include "dist/mpi_launch.h"
#include "model/memory_plan.h"
#include "train/telemetry.h"
#include "tokenizer/dataset.h"
#include "tokenizer/dataset_path.h"
#include "train/muon_step.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

double gibibytes(size_t bytes) { return static_cast<double>(bytes) / (1ull << 30); }

}  // namespace

void require_memory_fits(const Backend& backend, const GPTConfig& config, int batch_size, int seq_len,
                         Recompute recompute, const ShardSizes* shards, size_t optimizer_iterates,
                         size_t telemetry) {
    const Precision precision = backend.precision();
    const size_t scratch = backend.attention_scratch_bytes(seq_len, config.kv_heads());
    const auto needed_with = [&](Recompute policy) {
        return plan_memory(config, batch_size, seq_len, precision, policy, shards).total() +
               optimizer_iterates + telemetry + scratch;
    };
    const size_t needed = needed_with(recompute);
    const AvailableMemory available = backend.available_memory();
    if (needed <= available.bytes) return;
    std::string advice = "use a smaller --batch-size/-b or --seq-len/-t";
    if (recompute != Recompute::full)
        advice += format(", or --recompute full (%.2f GiB)", gibibytes(needed_with(Recompute::full)));
    throw Error(
        format("memory: this run needs %.2f GiB (B=%d, T=%d, recompute %s: the plan of `train --dry-run` "
               "plus %.2f GiB of attention scratch) but %.2f GiB is available (%s); %s",
               gibibytes(needed), batch_size, seq_len, recompute_name(recompute), gibibytes(scratch),
               gibibytes(available.bytes), available.source.c_str(), advice.c_str()));
}

void print_memory_plans(const TrainOptions& options, std::ostream& out) {
    DatasetInfo dataset;  // GPT-2's vocabulary without a dataset
    dataset.vocab_size = 50257;
    dataset.eot_id = 50256;
    if (!options.dataset.empty()) dataset = read_checked_dataset_info(resolve_dataset_path(options.dataset));
    const GPTConfig config = model_config(options.model, dataset.vocab_size, options.seq_len, dataset.eot_id);
    const int ranks = launcher_world_size();
    const int accumulation_steps =
        accumulation_steps_for(options.total_batch_tokens, options.batch_size, options.seq_len, ranks);
    std::optional<ShardSizes> shard_sizes;
    if (options.zero_optimizer) {
        shard_sizes = TrainStep::zero_sizes(
            config, ranks, std::max<size_t>(1, static_cast<size_t>(options.bucket_mb * (1 << 20))),
            options.optimizer == OptimizerKind::muon);
    }
    out << format(
        "model %s %s: %d layers, %d heads (%d key/value), width %d, MLP %d, vocabulary %d%s, %.2fM "
        "parameters\n",
        options.model.preset.c_str(), arch_name(config.arch), config.n_layer, config.n_head,
        config.kv_heads(), config.n_embd, config.mlp_hidden(), dataset.vocab_size,
        options.dataset.empty() ? " (GPT-2's; no --dataset given)" : "",
        static_cast<double>(config.num_parameters()) / 1e6);
    const bool muon = options.optimizer == OptimizerKind::muon;
    out << format("micro-batch B=%d, T=%d, precision %s, %d accumulation steps, %d rank%s%s\n",
                  options.batch_size, options.seq_len, precision_name(options.precision), accumulation_steps,
                  ranks, ranks == 1 ? "" : "s",
                  !options.zero_optimizer ? ""
                  : muon ? " with ZeRO-1 (per rank: the fp32 masters and optimizer state of its whole Muon "
                           "matrices and its block of the rest, the largest rank's counted; Muon's staging "
                           "in the shard exchange)"
                         : " with ZeRO-1 (per rank: its shard's fp32 masters and optimizer state, the arenas "
                           "padded to equal pieces)");
    if (muon)
        out << format(
            "optimizer muon: AdamW state on every parameter (Muon's momentum in its first moment), "
            "the Newton-Schulz iterates in %s\n",
            dtype_name(options.muon_ns_dtype));
    for (Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full}) {
        out << "\nrecompute " << recompute_name(recompute) << ":\n";
        MemoryPlan plan = plan_memory(config, options.batch_size, options.seq_len, options.precision,
                                      recompute, shard_sizes ? &*shard_sizes : nullptr);
        if (muon)
            plan.optimizer_iterates =
                muon_iterate_bytes(config, options.muon_ns_dtype, options.zero_optimizer ? ranks : 1);
        if (options.telemetry_interval > 0)
            plan.telemetry = telemetry_bytes(config, options.precision, options.fp8.scaling.history_length,
                                             shard_sizes ? shard_sizes->shard_elements : 0);
        out << format_memory_plan(plan);
    }
}

}  // namespace mixgpt
