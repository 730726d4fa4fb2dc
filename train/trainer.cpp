#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>

#include "core/error.h"
#include "core/log.h"
#include "core/owned_temporary.h"
#include "core/progress.h"
#include "core/stop_signal.h"
#include "dist/checkpoint_broadcast.h"
#include "dist/communicator.h"
#include "dist/process_communicator.h"
#include "eval/evaluate.h"
#include "model/checkpoint.h"
#include "model/finite_check.h"
#include "model/flops.h"
#include "model/gpt.h"
#include "model/memory_plan.h"
#include "model/parameters.h"
#include "tokenizer/dataset.h"
#include "tokenizer/dataset_path.h"
#include "tokenizer/loader.h"
#include "train/loader_rebatch.h"
#include "train/memory_check.h"
#include "train/quiet_unless_root.h"
#include "train/run_directory.h"
#include "train/spike_guard.h"
#include "train/task_eval.h"
#include "train/telemetry.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_due(int64_t step, int64_t interval) { return interval > 0 && step % interval == 0; }

class Trainer {
public:
    // given: null for the communicator the launch implies (dist/process_communicator.h).
    Trainer(const TrainOptions& options, Communicator* given, const StepObserver& observer,
            const BatchEditor& edit_batch);
    TrainResult run();

private:
    Communicator& communicator() const { return given_ != nullptr ? *given_ : process_->get(); }
    bool is_root() const { return communicator().rank() == 0; }
    void log_ranks() const;
    std::string start_checkpoint() const;                           // "" when starting fresh; rank 0 decides
    std::string choose_start_checkpoint() const;                    // rank 0
    void start_fresh() const;                                       // rank 0
    void claim_directory_for(const std::string& checkpoint) const;  // rank 0
    void resume_from(const std::string& path);
    void require_same_optimizer(const Checkpoint& checkpoint, const std::string& path) const;
    void warn_about_changed_options(const Checkpoint& checkpoint) const;
    void save_checkpoint();
    void evaluate();
    void evaluate_tasks();  // --task-eval: metrics and the progress line's fields
    // The fp8 state before an evaluation, restored after it (Fp8Linears::snapshot); none without fp8.
    std::optional<Fp8Linears::Snapshot> fp8_snapshot() const;
    // This rank's loader of a split: its shard of each global batch of (B, T+1) windows.
    LoaderOptions loader_options(const char* split, LoaderMode mode) const;
    TrainMetrics run_step();
    bool all_agree_to_stop(bool stop_here);
    void check_divergence(const TrainMetrics& metrics);

    const TrainOptions& options_;
    StepObserver observer_;
    BatchEditor edit_batch_;
    Communicator* given_;
    std::unique_ptr<ProcessCommunicator> process_;  // when no communicator was given
    QuietUnlessRoot quiet_;
    std::unique_ptr<RunDirectory> run_directory_;  // rank 0: locked for the run's lifetime
    DatasetInfo dataset_;
    std::string dataset_identity_;  // of each dataset of the run, comma-separated (recorded in checkpoints)
    TrainPlan plan_;
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<GPT> model_;
    std::unique_ptr<DataLoader> loader_;
    std::unique_ptr<TrainStep> train_step_;
    std::unique_ptr<MetricsWriter> metrics_;  // rank 0 only
    std::unique_ptr<Telemetry> telemetry_;    // rank 0, with --telemetry-interval only

    int64_t step_ = 0;  // optimizer steps completed
    int64_t tokens_seen_ = 0;
    StepStatus status_;  // host copy of the backend's StepStatus after the last step
    int bad_steps_in_a_row_ = 0;
    SpikeGuard spike_guard_;
    double peak_tflops_ = 0;  // of each device, for MFU; 0: unknown
    std::string last_saved_path_;  // rank 0: the newest checkpoint on disk, "" before the first
    std::string run_id_;           // rank 0: the lineage every checkpoint of this run records
    bool evaluation_possible_ = true;
    std::unique_ptr<TrainingTaskEvals> task_evals_;  // null without --task-eval
    std::vector<TaskResult> task_results_;           // of the last task evaluation
    std::string task_fields_;                        // " | hellaswag acc_norm 0.2955" after one
    TrainResult result_;
};

Trainer::Trainer(const TrainOptions& options, Communicator* given, const StepObserver& observer,
                 const BatchEditor& edit_batch)
    : options_(options),
      observer_(observer),
      edit_batch_(edit_batch),
      given_(given),
      process_(given != nullptr ? nullptr
                                : std::make_unique<ProcessCommunicator>(options.collective_timeout)),
      quiet_(communicator().rank() == 0),
      spike_guard_(options.skip_spikes, options.spike_window, options.max_spike_skips) {
    MIXGPT_REQUIRE(!options.dataset.empty(), "dataset: required (a directory or file from `mixgpt prepare`)");
    dataset_ = read_checked_dataset_info(resolve_dataset_path(options.dataset));
    for (const DatasetSource& source : options.mixture) read_checked_dataset_info(source.path);
    std::vector<std::string> datasets = {options.dataset};
    for (const DatasetSource& source : options.mixture) datasets.push_back(source.path);
    require_run_apart_from(options.output_dir, options.tensorboard_dir, datasets);
    plan_ = plan_training(options, dataset_.vocab_size, communicator().world_size(), dataset_.eot_id);
    if (is_root()) require_metrics_writable(options);
    if (is_root()) run_directory_ = std::make_unique<RunDirectory>(options.output_dir);

    BackendOptions backend_options;
    backend_options.device = options.device;
    backend_options.device_index =
        process_ ? process_->device_index(options.device_index) : options.device_index;
    backend_options.precision = options.precision;
    backend_options.threads = options.threads;
    backend_ = make_backend(backend_options);
    peak_tflops_ =
        options.peak_tflops > 0 ? options.peak_tflops : peak_tflops(backend_->name(), options.precision);
    if (process_) process_->attach_backend(*backend_);
    DataParallelConfig parallel;
    parallel.shard_optimizer = options.zero_optimizer;
    parallel.overlap = options.overlap_comm;
    parallel.bucket_bytes = std::max<size_t>(1, static_cast<size_t>(options.bucket_mb * (1 << 20)));
    std::optional<ShardSizes> shard_sizes;
    if (parallel.shard_optimizer) {
        shard_sizes = TrainStep::zero_sizes(plan_.model, communicator().world_size(), parallel.bucket_bytes,
                                            plan_.muon.has_value());
    }
    require_memory_fits(*backend_, plan_.model, options.batch_size, options.seq_len, options.recompute,
                        shard_sizes ? &*shard_sizes : nullptr,
                        plan_.muon
                            ? muon_iterate_bytes(plan_.model, plan_.muon->hyper.ns_dtype,
                                                 parallel.shard_optimizer ? communicator().world_size() : 1)
                            : 0,
                        options.telemetry_interval > 0 && (is_root() || parallel.shard_optimizer)
                            ? telemetry_bytes(plan_.model, options.precision, options.fp8.scaling.history_length,
                                              shard_sizes ? shard_sizes->shard_elements : 0)
                            : 0);
    model_ = std::make_unique<GPT>(
        *backend_, plan_.model, options.batch_size, options.seq_len, options.recompute,
        TrainStep::sharding(plan_.model, communicator(), parallel, plan_.muon.has_value()), options.fp8);
    model_->set_z_loss(plan_.z_loss);
    LoaderOptions loader_options = this->loader_options("train", LoaderMode::train);
    loader_options.seed = options.data_seed.value_or(options.seed);
    loader_options.verify_data = options.verify_data;
    Backend* backend = backend_.get();
    loader_options.allocate_staging = [backend](size_t bytes) {
        return backend->allocate_host_staging(bytes);
    };
    loader_ = std::make_unique<DataLoader>(loader_options);

    status_ = plan_.loss_scale.initial_status();
    train_step_ = std::make_unique<TrainStep>(*model_, communicator(), plan_.accumulation_steps,
                                              plan_.loss_scale.config(), status_, parallel, plan_.muon);
    // Rank 0 measures; under ZeRO-1 every rank measures its shard, and the ranks' sums are added.
    if (options.telemetry_interval > 0 && (is_root() || parallel.shard_optimizer))
        telemetry_ = std::make_unique<Telemetry>(*model_, *backend_, options.telemetry_interval, communicator());

    // Validation reads every dataset of the run in turn (each component of a mixture): possible
    // when any of them has a validation shard of a window or more.
    std::vector<DatasetInfo> validated = {dataset_};
    for (size_t k = 1; k < options.mixture.size(); ++k)
        validated.push_back(read_dataset_info(resolve_dataset_path(options.mixture[k].path)));
    int64_t val_tokens = 0;
    evaluation_possible_ = false;
    for (const DatasetInfo& info : validated) {
        dataset_identity_ += (dataset_identity_.empty() ? "" : ",") + dataset_identity(info.path);
        val_tokens += info.val.tokens;
        evaluation_possible_ =
            evaluation_possible_ ||
            std::any_of(info.shards.begin(), info.shards.end(),
                        [&](const ShardInfo& shard) { return shard.val.tokens >= options.seq_len + 1; });
    }
    if (!evaluation_possible_)
        log_warning(format("the validation split%s %lld tokens and no shard with seq-len + 1 = %d of them: "
                           "no evaluation",
                           validated.size() > 1 ? "s of the mixture's datasets hold" : " has",
                           static_cast<long long>(val_tokens), options.seq_len + 1));
    MIXGPT_REQUIRE(options.task_eval_interval >= 0, "task-eval-interval: must not be negative");
    if (!options.task_evals.empty()) {
        const Tokenizer tokenizer = Tokenizer::load(dataset_.tokenizer_path());
        MIXGPT_REQUIRE(
            tokenizer.sha256() == dataset_.tokenizer.sha256,
            dataset_.tokenizer_path() + ": not the tokenizer of " + dataset_.path + " (SHA-256 differs)");
        task_evals_ = std::make_unique<TrainingTaskEvals>(options.task_evals, options.task_eval_limit,
                                                          tokenizer, options.seq_len);
    }
    result_.metrics_path = metrics_path(options.output_dir);
}

// One line per rank, logged by rank 0: where each rank runs and on which device.
void Trainer::log_ranks() const {
    Communicator& ranks = communicator();
    const std::string line =
        format("rank %d of %d (local rank %d): %s, device %s", ranks.rank(), ranks.world_size(),
               ranks.local_rank(), ranks.describe().c_str(), backend_->name().c_str());
    for (const std::string& rank_line : ranks.all_gather_text(line)) log_info(rank_line);
    if (ranks.world_size() > 1)
        log_info(
            format("data parallel over %d ranks: %s optimizer, %.4g MiB gradient buckets exchanged %s, "
                   "collective timeout %g s",
                   ranks.world_size(), options_.zero_optimizer ? "sharded (ZeRO-1)" : "replicated",
                   options_.bucket_mb, options_.overlap_comm ? "during the backward pass" : "after it",
                   options_.collective_timeout));
}

std::string Trainer::start_checkpoint() const {
    std::string path;
    if (is_root()) path = choose_start_checkpoint();
    return broadcast_text(communicator(), path, 0);
}

// The rules of train/run_directory.h: never a silent mix of two runs in one directory.
std::string Trainer::choose_start_checkpoint() const {
    const std::string& resume = options_.resume;
    const std::string checkpoints = run_directory_->checkpoints();
    if (resume.empty()) {
        start_fresh();
        return "";
    }
    if (resume != "auto" && resume != "if-present") {
        claim_directory_for(resume);
        return resume;
    }
    const std::string newest = newest_valid_checkpoint(checkpoints);
    if (!newest.empty()) return newest;
    const size_t invalid = list_checkpoints(checkpoints).size();
    MIXGPT_REQUIRE(
        invalid == 0,
        format("resume: none of the %zu checkpoints in %s is valid (the warnings above say why); they "
               "are left as they are: resume from a good copy with --resume FILE",
               invalid, checkpoints.c_str()));
    MIXGPT_REQUIRE(resume == "if-present",
                   checkpoints +
                       ": no checkpoint to resume from (--resume); start without --resume, or use "
                       "--resume if-present to start from scratch when there is none");
    log_info("no checkpoint in " + checkpoints + ": starting from scratch (--resume if-present)");
    return "";
}

void Trainer::start_fresh() const {
    const std::string held = run_directory_->run_files();
    if (held.empty()) return;
    MIXGPT_REQUIRE(options_.overwrite,
                   run_directory_->path() + ": holds another run (" + held +
                       "): continue it with --resume, or start over with --overwrite (which moves it into " +
                       run_directory_->path() + "/replaced-<time>/)");
    log_info("moved the previous run in " + run_directory_->path() + " to " +
             run_directory_->move_run_aside() + " (--overwrite)");
}

// --resume FILE into a directory that holds a run: FILE must be one of its checkpoints or of its
// lineage, or the run there is moved aside (--overwrite).
void Trainer::claim_directory_for(const std::string& checkpoint) const {
    const std::string held = run_directory_->run_files();
    if (held.empty()) return;
    std::error_code error;
    const bool inside = std::filesystem::equivalent(std::filesystem::path(checkpoint).parent_path(),
                                                    run_directory_->checkpoints(), error);
    if (inside) {
        MIXGPT_REQUIRE(!options_.overwrite,
                       "overwrite: " + checkpoint +
                           " is one of the checkpoints it would move "
                           "aside; resume from a copy elsewhere, or without --overwrite");
        return;
    }
    const std::string lineage = checkpoint_run_id(checkpoint);
    if (!lineage.empty() && lineage == run_directory_->run_id()) return;
    MIXGPT_REQUIRE(options_.overwrite,
                   run_directory_->path() + ": holds another run (" + held + ") than " + checkpoint +
                       ": resume into an empty directory, or use --overwrite to move the run there into " +
                       run_directory_->path() + "/replaced-<time>/ first");
    log_info("moved the previous run in " + run_directory_->path() + " to " +
             run_directory_->move_run_aside() + " (--overwrite)");
}

void Trainer::resume_from(const std::string& path) {
    const Checkpoint checkpoint = broadcast_checkpoint(
        communicator(),
        [&] {
            Checkpoint read = read_checkpoint(path);
            require_compatible(read, path, plan_.model, dataset_.tokenizer.sha256);
            if (!options_.allow_nonfinite) require_finite_checkpoint(read, path);
            return read;
        },
        0);
    require_same_optimizer(checkpoint, path);
    if (is_root()) warn_about_changed_options(checkpoint);
    model_->load_master_parameters(checkpoint.parameters.data(),
                                   static_cast<int64_t>(checkpoint.parameters.size()));
    const TensorView working = model_->working_parameters();
    const bool same_working_dtype = activation_dtype(checkpoint.precision) == working.dtype;
    if (working.dtype != DType::f32 && same_working_dtype && !checkpoint.working_bits.empty())
        backend_->copy_to_backend(working.data, checkpoint.working_bits.data(), working.bytes());
    train_step_->upload_moments({checkpoint.adam_m, checkpoint.adam_v});
    // An fp8 run resumed from another precision's checkpoint starts its scaling afresh.
    if (model_->fp8() != nullptr && !checkpoint.fp8_scaling.empty())
        model_->fp8()->load_flat(checkpoint.fp8_scaling);
    status_ = checkpoint.status;
    train_step_->write_status(status_);
    const LoaderState saved = LoaderState::from_vector(checkpoint.loader_state);
    const LoaderState position = rebatch_loader_state(saved, loader_->state());
    if (position.global_batch != saved.global_batch)
        log_info(format(
            "data position: global batch %lld of %lld windows in the checkpoint is batch %lld of %lld "
            "windows in this run",
            static_cast<long long>(saved.next_batch), static_cast<long long>(saved.global_batch),
            static_cast<long long>(position.next_batch), static_cast<long long>(position.global_batch)));
    loader_->restore(position);
    step_ = checkpoint.step;
    tokens_seen_ = checkpoint.tokens_seen;
    bad_steps_in_a_row_ = static_cast<int>(checkpoint.bad_steps_in_a_row);
    spike_guard_.restore(checkpoint.spike_guard);
    if (is_root()) run_id_ = checkpoint.run_id.empty() ? run_directory_->run_id() : checkpoint.run_id;
    result_.last_checkpoint = path;
    last_saved_path_ = path;
    log_info(format("resumed from %s at step %lld (loss scale %g, %d skipped steps)", path.c_str(),
                    static_cast<long long>(step_), static_cast<double>(status_.loss_scale),
                    status_.skipped_steps));
}

// A run's optimizer state means something to its own optimizer only: AdamW's moments are not
// Muon's momentum. A checkpoint without optimizer state (import) starts Muon's at zero.
void Trainer::require_same_optimizer(const Checkpoint& checkpoint, const std::string& path) const {
    std::string stored;
    bool imported = false;
    for (const auto& [name, value] : checkpoint.options) {
        if (name == "optimizer") stored = value;
        if (name == "imported_from") imported = true;
    }
    const std::string wanted = optimizer_name(options_.optimizer);
    if (imported) {
        if (plan_.muon)
            log_info("Muon's momentum starts at zero: " + path +
                     " was imported and holds no optimizer state");
        return;
    }
    if (stored.empty()) stored = optimizer_name(OptimizerKind::adamw);  // checkpoints from before Muon
    MIXGPT_REQUIRE(stored == wanted, "optimizer: " + path + " was trained with " + stored + ", not " +
                                         wanted + "; resume it with --optimizer " + stored +
                                         " (changing a run's optimizer is not supported)");
}

void Trainer::warn_about_changed_options(const Checkpoint& checkpoint) const {
    for (const auto& [name, value] : describe_options(options_)) {
        for (const auto& [stored_name, stored_value] : checkpoint.options) {
            if (stored_name == name && stored_value != value && !is_run_mechanics(name)) {
                const auto shown = [](const std::string& text) { return text.empty() ? "not given" : text; };
                log_warning("option " + name + " is " + shown(value) + " now, " + shown(stored_value) +
                            " in the checkpoint");
            }
        }
    }
}

// A collective: every rank contributes its shard of the optimizer state; rank 0 writes.
void Trainer::save_checkpoint() {
    Checkpoint checkpoint;
    checkpoint.parameters = train_step_->gather_masters(0);
    OptimizerMoments moments = train_step_->gather_moments(0);
    const std::string directory = checkpoint_directory(options_.output_dir);
    const std::string path = checkpoint_path(directory, step_);
    if (!is_root()) {
        result_.last_checkpoint = path;
        return;
    }
    checkpoint.config = plan_.model;
    checkpoint.tokenizer_path = dataset_.tokenizer_path();
    checkpoint.tokenizer_sha256 = dataset_.tokenizer.sha256;
    checkpoint.precision = options_.precision;
    checkpoint.step = step_;
    checkpoint.seed = options_.seed;
    checkpoint.tokens_seen = tokens_seen_;
    checkpoint.bad_steps_in_a_row = bad_steps_in_a_row_;
    checkpoint.spike_guard = spike_guard_.state();
    const TensorView working = model_->working_parameters();  // complete on every rank
    if (working.dtype != DType::f32) {
        checkpoint.working_bits.resize(static_cast<size_t>(working.numel()));
        backend_->copy_to_host(checkpoint.working_bits.data(), working.data, working.bytes());
    }
    checkpoint.adam_m = std::move(moments.m);
    checkpoint.adam_v = std::move(moments.v);
    checkpoint.status = train_step_->read_status();
    checkpoint.status.grad_norm_squared = 0;
    checkpoint.status.skip = 0;
    checkpoint.loader_state = loader_->state().to_vector();
    if (model_->fp8() != nullptr) checkpoint.fp8_scaling = model_->fp8()->flat();
    checkpoint.options = describe_options(options_);
    checkpoint.options.emplace_back("dataset_identity", dataset_identity_);
    checkpoint.run_id = run_id_;

    try {
        write_checkpoint(path, checkpoint);
    } catch (const Error& error) {
        const std::string& previous = last_saved_path_;
        throw Error(std::string(error.what()) +
                    (previous.empty() ? "; no earlier checkpoint of this run exists"
                                      : "; the previous checkpoint " + previous + " is kept intact"));
    }
    last_saved_path_ = path;
    result_.last_checkpoint = path;
    remove_old_checkpoints(directory, options_.keep_checkpoints, run_id_, path);
    log_info("checkpoint " + path);
}

LoaderOptions Trainer::loader_options(const char* split, LoaderMode mode) const {
    LoaderOptions options;
    options.dataset_path = dataset_.path;
    options.split = split;
    options.batch_size = options_.batch_size;
    options.seq_len = options_.seq_len;
    options.align_documents = options_.align_documents;  // the loader aligns training windows only
    options.mode = mode;
    options.rank = communicator().rank();
    options.world_size = communicator().world_size();
    options.mixture = options_.mixture;
    options.expected_tokenizer_sha256 = dataset_.tokenizer.sha256;
    options.vocab_limit = plan_.model.vocab_size;
    return options;
}

std::optional<Fp8Linears::Snapshot> Trainer::fp8_snapshot() const {
    if (model_->fp8() == nullptr) return std::nullopt;
    return model_->fp8()->snapshot();
}

void Trainer::evaluate() {
    if (!evaluation_possible_) return;
    LoaderOptions options = loader_options("val", LoaderMode::eval);
    options.prefetch = false;
    DataLoader loader(options);
    const std::optional<Fp8Linears::Snapshot> fp8_state = fp8_snapshot();
    LossTotals totals = evaluate_loader(*model_, loader, options_.eval_batches);
    if (fp8_state) model_->fp8()->restore(*fp8_state);
    double sums[2] = {totals.nats, static_cast<double>(totals.tokens)};  // exact below 2^53 tokens
    communicator().all_reduce_sum_host(sums, 2);
    totals.nats = sums[0];
    totals.tokens = static_cast<int64_t>(sums[1]);
    result_.last_val_loss = totals.mean_loss();
    const double zero_fraction = options_.gradient_zero_stats
                                     ? gradient_zero_fraction(*model_, train_step_->owned(), communicator())
                                     : -1;
    if (!is_root()) return;
    EvalMetrics metrics;
    metrics.grad_zero_fraction = zero_fraction;
    metrics.step = step_;
    metrics.val_loss = totals.mean_loss();
    metrics.val_perplexity = totals.perplexity();
    metrics.val_tokens = totals.tokens;
    metrics_->write(metrics);
    log_info(format("step %lld: val loss %.4f, perplexity %.2f over %lld tokens",
                    static_cast<long long>(step_), metrics.val_loss, metrics.val_perplexity,
                    static_cast<long long>(metrics.val_tokens)));
}

void Trainer::evaluate_tasks() {
    if (!task_evals_) return;
    const std::optional<Fp8Linears::Snapshot> fp8_state = fp8_snapshot();
    task_results_ = task_evals_->run(*model_, communicator());
    if (fp8_state) model_->fp8()->restore(*fp8_state);
    if (!is_root()) return;
    task_fields_.clear();
    for (const TaskResult& result : task_results_) {
        TaskEvalMetrics metrics;
        metrics.step = step_;
        metrics.task = result.task;
        metrics.data = result.data;
        metrics.examples = result.totals.examples;
        metrics.acc = result.totals.acc();
        metrics.acc_norm = result.totals.acc_norm();
        metrics.chance = result.totals.chance();
        metrics_->write(metrics);
        log_info(format("step %lld: %s acc %.4f, acc_norm %.4f over %lld examples (%s)",
                        static_cast<long long>(step_), result.task.c_str(), metrics.acc, metrics.acc_norm,
                        static_cast<long long>(metrics.examples), result.data.c_str()));
        task_fields_ += format(" | %s acc_norm %.4f", result.task.c_str(), metrics.acc_norm);
    }
}

TrainMetrics Trainer::run_step() {
    const auto start = std::chrono::steady_clock::now();
    AdamWHyper hyper = plan_.adamw;
    hyper.learning_rate = static_cast<float>(plan_.schedule.learning_rate(step_));
    hyper.seed = step_seed(options_.seed, step_);
    LrSchedule unit_schedule = plan_.schedule;  // the schedule's factor, for Muon's groups
    unit_schedule.peak = 1;

    const bool measured = telemetry_ && telemetry_->due(step_);
    if (measured) telemetry_->before_step();
    train_step_->begin();
    Batch batch;
    for (int micro = 0; micro < plan_.accumulation_steps; ++micro) {
        try {
            loader_->next(batch);
        } catch (const Error& error) {  // e.g. the dataset changed under the run
            throw Error(std::string(error.what()) + "; stopped at step " + std::to_string(step_) +
                        (result_.last_checkpoint.empty()
                             ? ", no checkpoint written yet"
                             : ", the last checkpoint " + result_.last_checkpoint + " is intact"));
        }
        train_step_->micro_step(edit_batch_ ? edit_batch_(step_ + 1, batch) : batch.tokens);
    }
    const StepResult result =
        spike_guard_.finish(*train_step_, hyper, unit_schedule.learning_rate(step_), step_ + 1);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    TrainMetrics metrics;
    const float scale_used = status_.loss_scale;
    status_ = result.status;
    ++step_;
    tokens_seen_ += plan_.tokens_per_step;
    if (measured) {
        const TelemetryRecord record = telemetry_->after_step(step_, scale_used, train_step_->kept_gradients());
        if (is_root()) metrics_->write(record);
    }
    metrics.step = step_;
    metrics.loss = result.loss;
    metrics.z_loss = plan_.z_loss > 0 ? result.z_loss : -1;
    metrics.learning_rate = hyper.learning_rate;
    metrics.grad_norm = std::sqrt(static_cast<double>(status_.grad_norm_squared)) / scale_used;
    metrics.loss_scale = scale_used;
    metrics.skipped = status_.skip != 0;
    metrics.skipped_total = status_.skipped_steps;
    if (spike_guard_.enabled())
        metrics.spike_skips = TrainMetrics::SpikeSkips{spike_guard_.last_held(), spike_guard_.skips()};
    metrics.tokens = tokens_seen_;
    metrics.tokens_per_second = static_cast<double>(plan_.tokens_per_step) / seconds;
    metrics.ms_per_step = seconds * 1e3;
    metrics.mfu = model_flops_utilization(plan_.model, options_.seq_len, metrics.tokens_per_second,
                                          peak_tflops_, communicator().world_size());
    metrics.memory_bytes = backend_->peak_memory_bytes();
    if (model_->fp8() != nullptr) {
        metrics.fp8 = true;
        metrics.fp8_saturated = model_->fp8()->take_saturation();
    }
    return metrics;
}

// A signal may reach some ranks only, or at different steps: all stop when any asks to.
bool Trainer::all_agree_to_stop(bool stop_here) {
    if (communicator().world_size() == 1) return stop_here;
    double votes = stop_here ? 1 : 0;
    communicator().all_reduce_sum_host(&votes, 1);
    return votes > 0;
}

// A step is bad when its loss is not finite, or its gradients were not finite and no loss
// scaling can recover (no dynamic scale, or the scale already at its floor).
void Trainer::check_divergence(const TrainMetrics& metrics) {
    const LossScaleConfig config = plan_.loss_scale.config();
    const bool unrecoverable_skip =
        metrics.skipped && (!config.dynamic || metrics.loss_scale <= config.min_scale);
    const bool bad = !std::isfinite(metrics.loss) || unrecoverable_skip;
    bad_steps_in_a_row_ = bad ? bad_steps_in_a_row_ + 1 : 0;
    if (bad)
        log_warning(
            format("step %lld: non-finite loss or gradients, update skipped", static_cast<long long>(step_)));
    MIXGPT_REQUIRE(
        bad_steps_in_a_row_ < options_.max_bad_steps,
        format("training diverged: %d consecutive steps with non-finite loss or gradients (up to step "
               "%lld); stopped without saving, the last checkpoint (%s) is intact",
               bad_steps_in_a_row_, static_cast<long long>(step_),
               result_.last_checkpoint.empty() ? "none" : result_.last_checkpoint.c_str()));
}

TrainResult Trainer::run() {
    result_.rank = communicator().rank();
    log_ranks();
    if (is_root())
        for (const std::string& directory : {options_.output_dir, checkpoint_directory(options_.output_dir)})
            for (const std::string& stale : remove_stale_owned_files(directory, {}))
                log_info("removed " + stale + " (a temporary whose writer is gone)");
    const std::string path = start_checkpoint();
    const bool resumed = !path.empty();
    if (resumed) {
        resume_from(path);
    } else {
        const std::vector<float> initial = init_parameters(plan_.model, model_->layout(), options_.seed);
        model_->load_master_parameters(initial.data(), static_cast<int64_t>(initial.size()));
    }
    if (is_root()) {
        if (run_id_.empty()) run_id_ = new_run_id();
        run_directory_->write_run_id(run_id_);
        if (resumed) {
            const int64_t dropped = truncate_metrics_after(result_.metrics_path, step_);
            if (dropped > 0)
                log_info(format("%s: removed %lld lines past step %lld (the stopped run's, redone now)",
                                result_.metrics_path.c_str(), static_cast<long long>(dropped),
                                static_cast<long long>(step_)));
        }
        metrics_ = std::make_unique<MetricsWriter>(result_.metrics_path, resumed, options_);
        if (resumed) metrics_->write_resume(step_);
    }

    log_info(format(
        "model %s %s: %d layers, %d heads (%d key/value), width %d, MLP %d, vocabulary %d "
        "(%.2fM parameters) on %s",
        options_.model.preset.c_str(), arch_name(plan_.model.arch), plan_.model.n_layer, plan_.model.n_head,
        plan_.model.kv_heads(), plan_.model.n_embd, plan_.model.mlp_hidden(), plan_.model.vocab_size,
        static_cast<double>(plan_.model.num_parameters()) / 1e6, backend_->name().c_str()));
    log_info(format(
        "%lld steps of %lld tokens (B=%d, T=%d, %d accumulation steps), precision %s, recompute %s, "
        "loss scaling %s",
        static_cast<long long>(plan_.total_steps), static_cast<long long>(plan_.tokens_per_step),
        options_.batch_size, options_.seq_len, plan_.accumulation_steps, precision_name(options_.precision),
        recompute_name(options_.recompute), plan_.loss_scale.describe().c_str()));

    StopSignalGuard signals;
    std::optional<Progress> progress;
    if (is_root()) progress.emplace("train", static_cast<double>(plan_.total_steps - step_), "step");
    const int64_t first_step = step_;
    int64_t last_saved_step = resumed ? step_ : -1;
    result_.last_loss = kNaN;
    result_.last_val_loss = kNaN;
    bool stopping = false;
    while (step_ < plan_.total_steps && !(stopping = all_agree_to_stop(signals.stop_requested()))) {
        const TrainMetrics metrics = run_step();
        result_.last_loss = metrics.loss;
        if (is_root()) {
            metrics_->write(metrics);
            progress->update(static_cast<double>(step_ - first_step),
                             format("step %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s",
                                    static_cast<long long>(step_), static_cast<long long>(plan_.total_steps),
                                    metrics.loss, metrics.learning_rate, metrics.tokens_per_second) +
                                 task_fields_);
        }
        check_divergence(metrics);
        spike_guard_.stop_at_limit(step_, [this] { save_checkpoint(); return result_.last_checkpoint; });
        if (observer_) observer_(metrics);
        if (is_due(step_, options_.eval_interval) && step_ < plan_.total_steps) evaluate();
        if (is_due(step_, options_.task_eval_interval) && step_ < plan_.total_steps) evaluate_tasks();
        if (is_due(step_, options_.checkpoint_interval)) {
            save_checkpoint();
            last_saved_step = step_;
        }
    }
    if (progress)
        progress->finish(format("step %lld/%lld | loss %.4f", static_cast<long long>(step_),
                                static_cast<long long>(plan_.total_steps), result_.last_loss));
    result_.stopped_by_signal = stopping;
    if (result_.stopped_by_signal) {
        log_info(signals.signal_number() != 0
                     ? format("signal %d: stopping after step %lld", signals.signal_number(),
                              static_cast<long long>(step_))
                     : format("another rank received a signal: stopping after step %lld",
                              static_cast<long long>(step_)));
    } else {
        evaluate();
        evaluate_tasks();
        if (task_evals_ && is_root())
            write_task_report((std::filesystem::path(options_.output_dir) / "eval.json").string(), step_,
                              result_.last_val_loss, task_results_);
    }
    if (last_saved_step != step_) save_checkpoint();
    result_.steps_done = step_;
    return result_;
}

}  // namespace

TrainResult run_training(const TrainOptions& options, const StepObserver& observer,
                         const BatchEditor& edit_batch) {
    Trainer trainer(options, nullptr, observer, edit_batch);
    return trainer.run();
}

TrainResult run_training(const TrainOptions& options, Communicator& communicator,
                         const StepObserver& observer, const BatchEditor& edit_batch) {
    Trainer trainer(options, &communicator, observer, edit_batch);
    return trainer.run();
}

std::string metrics_path(const std::string& output_dir) {
    return (std::filesystem::path(output_dir) / "metrics.jsonl").string();
}

std::string checkpoint_directory(const std::string& output_dir) {
    return (std::filesystem::path(output_dir) / "checkpoints").string();
}

}  // namespace mixgpt
