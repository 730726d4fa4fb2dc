#include "train/train_options.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

std::string join(const std::vector<int64_t>& values) {
    std::string text;
    for (int64_t value : values) text += (text.empty() ? "" : ", ") + std::to_string(value);
    return text;
}

void require_positive(double value, const char* option) {
    MIXGPT_REQUIRE(std::isfinite(value) && value > 0, std::string(option) + ": must be a positive number");
}

MuonPlan plan_muon(const TrainOptions& options) {
    require_positive(options.muon_lr, "muon-lr");
    MIXGPT_REQUIRE(options.muon_momentum >= 0 && options.muon_momentum < 1,
                   "muon-momentum: must lie in [0, 1)");
    MIXGPT_REQUIRE(options.muon_ns_steps >= 1 && options.muon_ns_steps <= 100,
                   "muon-ns-steps: must lie in [1, 100]");
    MIXGPT_REQUIRE(options.muon_ns_dtype == DType::bf16 || options.muon_ns_dtype == DType::f32,
                   "muon-ns-precision: must be bf16 or fp32");
    MIXGPT_REQUIRE(std::isfinite(options.muon_weight_decay) && options.muon_weight_decay >= 0,
                   "muon-weight-decay: must not be negative");
    if (options.embedding_lr) require_positive(*options.embedding_lr, "embedding-lr");
    if (options.head_lr) require_positive(*options.head_lr, "head-lr");
    MuonPlan plan;
    plan.hyper.learning_rate = static_cast<float>(options.muon_lr);
    plan.hyper.momentum = static_cast<float>(options.muon_momentum);
    plan.hyper.nesterov = options.muon_nesterov;
    plan.hyper.ns_steps = options.muon_ns_steps;
    plan.hyper.ns_dtype = options.muon_ns_dtype;
    plan.hyper.weight_decay = static_cast<float>(options.muon_weight_decay);
    plan.base_lr = static_cast<float>(options.learning_rate);
    plan.embedding_lr = static_cast<float>(muon_embedding_lr(options));
    plan.head_lr = static_cast<float>(muon_head_lr(options));
    return plan;
}

}  // namespace

OptimizerKind parse_optimizer(const std::string& name) {
    if (name == "adamw") return OptimizerKind::adamw;
    if (name == "muon") return OptimizerKind::muon;
    throw Error("optimizer: '" + name + "' is not one of adamw, muon");
}

double muon_embedding_lr(const TrainOptions& options) {
    return options.embedding_lr.value_or(muon_embedding_rate_factor * options.learning_rate);
}

double muon_head_lr(const TrainOptions& options) {
    return options.head_lr.value_or(muon_head_rate_factor * options.learning_rate);
}

const char* optimizer_name(OptimizerKind kind) { return kind == OptimizerKind::muon ? "muon" : "adamw"; }

int accumulation_steps_for(int64_t total_batch_tokens, int batch_size, int seq_len, int world_size) {
    const int64_t micro = static_cast<int64_t>(batch_size) * seq_len * world_size;
    const std::string micro_text =
        format("B*T*ranks = %d*%d*%d = %lld", batch_size, seq_len, world_size, static_cast<long long>(micro));
    if (total_batch_tokens == 0) return 1;
    MIXGPT_REQUIRE(
        total_batch_tokens >= micro,
        format("total-batch-tokens: %lld is less than one micro-batch (%s); use %lld or a multiple",
               static_cast<long long>(total_batch_tokens), micro_text.c_str(),
               static_cast<long long>(micro)));
    if (total_batch_tokens % micro != 0) {
        const int64_t below = total_batch_tokens / micro * micro;
        std::string message = format("total-batch-tokens: %lld is not a multiple of %s; totals that work: %s",
                                     static_cast<long long>(total_batch_tokens), micro_text.c_str(),
                                     join({below, below + micro}).c_str());
        const int64_t per_sequence = static_cast<int64_t>(seq_len) * world_size;
        if (total_batch_tokens % per_sequence == 0) {
            std::vector<int64_t> sizes;
            const int64_t sequences = total_batch_tokens / per_sequence;
            for (int64_t b = 1; b <= sequences && sizes.size() < 8; ++b)
                if (sequences % b == 0) sizes.push_back(b);
            message += "; or keep it with batch-size " + join(sizes);
        }
        throw Error(message);
    }
    const int64_t steps = total_batch_tokens / micro;
    MIXGPT_REQUIRE(steps <= 1 << 20, "total-batch-tokens: more than 2^20 accumulation steps");
    return static_cast<int>(steps);
}

TrainPlan plan_training(const TrainOptions& options, int vocab_size, int world_size, int32_t end_of_text) {
    MIXGPT_REQUIRE(options.batch_size >= 1, "batch-size: must be at least 1");
    MIXGPT_REQUIRE(options.seq_len >= 1, "seq-len: must be at least 1");
    MIXGPT_REQUIRE(options.steps >= 0 && options.token_budget >= 0, "steps, tokens: must not be negative");
    MIXGPT_REQUIRE(!(options.steps > 0 && options.token_budget > 0),
                   "steps, tokens: give exactly one of --steps and --tokens, not both");
    MIXGPT_REQUIRE(options.steps > 0 || options.token_budget > 0,
                   "steps, tokens: give --steps N or --tokens N with N >= 1 (0 trains nothing)");
    MIXGPT_REQUIRE(options.eval_interval >= 0, "eval-interval: must not be negative");
    MIXGPT_REQUIRE(options.eval_batches >= 0, "eval-batches: must not be negative");
    MIXGPT_REQUIRE(options.checkpoint_interval >= 0, "checkpoint-interval: must not be negative");
    MIXGPT_REQUIRE(options.keep_checkpoints >= 1, "keep-checkpoints: must be at least 1");
    MIXGPT_REQUIRE(options.max_bad_steps >= 1, "max-bad-steps: must be at least 1");
    MIXGPT_REQUIRE(std::isfinite(options.skip_spikes) && options.skip_spikes >= 0,
                   "skip-spikes: must be a finite number of standard deviations > 0 (0: off)");
    MIXGPT_REQUIRE(options.spike_window >= 2, "spike-window: must be at least 2 steps");
    MIXGPT_REQUIRE(options.max_spike_skips >= 1, "max-spike-skips: must be at least 1");
    MIXGPT_REQUIRE(options.telemetry_interval >= 0, "telemetry-interval: must not be negative (0: off)");
    MIXGPT_REQUIRE(std::isfinite(options.peak_tflops) && options.peak_tflops >= 0,
                   "peak-tflops: must be a finite number >= 0 (0: the device's, when known)");
    MIXGPT_REQUIRE(!options.output_dir.empty(), "output-dir: must not be empty");
    MIXGPT_REQUIRE(!(options.overwrite && (options.resume == "auto" || options.resume == "if-present")),
                   "overwrite: starts a new run in the output directory; --resume continues the one there: "
                   "give one of them");
    MIXGPT_REQUIRE(options.beta1 >= 0 && options.beta1 < 1, "beta1: must lie in [0, 1)");
    MIXGPT_REQUIRE(options.beta2 >= 0 && options.beta2 < 1, "beta2: must lie in [0, 1)");
    require_positive(options.epsilon, "epsilon");
    MIXGPT_REQUIRE(std::isfinite(options.weight_decay) && options.weight_decay >= 0,
                   "weight-decay: must not be negative");
    MIXGPT_REQUIRE(std::isfinite(options.grad_clip), "grad-clip: must be a number");
    MIXGPT_REQUIRE(std::isfinite(options.z_loss) && options.z_loss >= 0,
                   "z-loss: must be a finite number >= 0 (0: off)");
    MIXGPT_REQUIRE(!options.stochastic_rounding || options.precision == Precision::bf16,
                   "stochastic-rounding: applies to bf16 runs only");
    require_positive(options.bucket_mb, "bucket-mb");
    MIXGPT_REQUIRE(std::isfinite(options.collective_timeout) && options.collective_timeout >= 0,
                   "collective-timeout: must be a number of seconds >= 0 (0: no timeout)");

    TrainPlan plan;
    plan.model = model_config(options.model, vocab_size, options.seq_len, end_of_text);
    if (options.precision == Precision::fp8) check_fp8_options(options.fp8, plan.model.n_layer);
    plan.accumulation_steps =
        accumulation_steps_for(options.total_batch_tokens, options.batch_size, options.seq_len, world_size);
    plan.tokens_per_step =
        static_cast<int64_t>(options.batch_size) * options.seq_len * plan.accumulation_steps * world_size;
    // Rounded up without forming token_budget + tokens_per_step - 1, which overflows near 2^63.
    plan.total_steps = options.steps > 0 ? options.steps
                                         : options.token_budget / plan.tokens_per_step +
                                               (options.token_budget % plan.tokens_per_step != 0 ? 1 : 0);

    plan.schedule.peak = options.learning_rate;
    plan.schedule.warmup_steps = options.warmup_steps;
    plan.schedule.total_steps = plan.total_steps;
    plan.schedule.decay = options.lr_decay;
    plan.schedule.final_fraction = options.final_lr_fraction;
    plan.schedule.decay_fraction = options.decay_fraction;
    plan.schedule.validate();

    plan.adamw.beta1 = static_cast<float>(options.beta1);
    plan.adamw.beta2 = static_cast<float>(options.beta2);
    plan.adamw.epsilon = static_cast<float>(options.epsilon);
    plan.adamw.weight_decay = static_cast<float>(options.weight_decay);
    plan.adamw.max_grad_norm = static_cast<float>(options.grad_clip);
    plan.adamw.stochastic_rounding = options.stochastic_rounding;
    plan.z_loss = static_cast<float>(options.z_loss);

    if (options.optimizer == OptimizerKind::muon) plan.muon = plan_muon(options);

    plan.loss_scale =
        parse_loss_scale(options.loss_scale, options.precision, options.loss_scale_growth_interval);
    return plan;
}

namespace {

// "PATH:WEIGHT": true, with `path` and `weight` the text before and after the last ':', when that
// after it reads as a number (whatever its value: parse_weight judges it); false otherwise.
bool split_weight_suffix(const std::string& argument, std::string& path, std::string& weight) {
    const size_t colon = argument.rfind(':');
    path = argument;
    if (colon == std::string::npos) return false;
    const std::string number = argument.substr(colon + 1);
    char* end = nullptr;
    std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size()) return false;
    path = argument.substr(0, colon);
    weight = number;
    return true;
}

double parse_weight(const std::string& text, const std::string& where) {
    char* end = nullptr;
    const double weight = std::strtod(text.c_str(), &end);
    MIXGPT_REQUIRE(!text.empty() && end == text.c_str() + text.size() && std::isfinite(weight) && weight > 0,
                   where + ": '" + text + "' is not a positive weight");
    return weight;
}

std::string describe_mixture(const std::vector<DatasetSource>& mixture) {
    std::string text;
    for (const DatasetSource& source : mixture)
        text += (text.empty() ? "" : ",") + source.path + ":" + format("%.17g", source.weight);
    return text;
}

}  // namespace

void set_datasets(TrainOptions& options, const std::vector<std::string>& datasets,
                  const std::string& weights) {
    options.mixture.clear();
    if (datasets.empty()) return;
    std::vector<DatasetSource> sources;
    bool any_suffix = false;
    for (const std::string& argument : datasets) {
        DatasetSource source;
        std::string weight;
        const bool has_weight = split_weight_suffix(argument, source.path, weight);
        any_suffix = any_suffix || has_weight;
        source.weight = has_weight ? parse_weight(weight, "--dataset " + argument) : 1;
        // Recorded in the run's checkpoints: the same dataset wherever a later command runs from.
        source.path = std::filesystem::absolute(source.path).lexically_normal().string();
        sources.push_back(source);
    }
    if (!weights.empty()) {
        MIXGPT_REQUIRE(!any_suffix,
                       "--weights: give the weights either with --weights or as --dataset PATH:WEIGHT");
        std::vector<std::string> parts;
        std::stringstream stream(weights);
        for (std::string part; std::getline(stream, part, ',');) parts.push_back(part);
        MIXGPT_REQUIRE(parts.size() == sources.size(),
                       format("--weights: %zu weights for %zu datasets", parts.size(), sources.size()));
        for (size_t k = 0; k < parts.size(); ++k) sources[k].weight = parse_weight(parts[k], "--weights");
    }
    options.dataset = sources.front().path;
    if (sources.size() > 1)
        options.mixture = sources;
    else
        MIXGPT_REQUIRE(weights.empty() && !any_suffix,
                       "--weights: a weight means something only with two datasets or more");
}

std::vector<std::pair<std::string, std::string>> describe_options(const TrainOptions& options) {
    const auto number = [](double value) { return format("%.17g", value); };
    const auto integer = [](int64_t value) { return std::to_string(value); };
    std::vector<std::pair<std::string, std::string>> described = describe_model_options(options.model);
    const std::vector<std::pair<std::string, std::string>> rest = {
        {"dataset", options.dataset},
        {"mixture", describe_mixture(options.mixture)},
        {"batch_size", integer(options.batch_size)},
        {"seq_len", integer(options.seq_len)},
        {"align_documents", options.align_documents ? "true" : ""},
        {"total_batch_tokens", integer(options.total_batch_tokens)},
        {"steps", integer(options.steps)},
        {"tokens", integer(options.token_budget)},
        {"lr", number(options.learning_rate)},
        {"warmup_steps", integer(options.warmup_steps)},
        {"lr_schedule", lr_decay_name(options.lr_decay)},
        {"final_lr_fraction", number(options.final_lr_fraction)},
        {"decay_fraction", number(options.decay_fraction)},
        {"beta1", number(options.beta1)},
        {"beta2", number(options.beta2)},
        {"epsilon", number(options.epsilon)},
        {"weight_decay", number(options.weight_decay)},
        {"grad_clip", number(options.grad_clip)},
        {"z_loss", number(options.z_loss)},
        {"stochastic_rounding", options.stochastic_rounding ? "true" : "false"},
        {"precision", precision_name(options.precision)},
        {"recompute", recompute_name(options.recompute)},
        {"loss_scale", options.loss_scale},
        {"loss_scale_growth_interval", integer(options.loss_scale_growth_interval)},
        {"max_bad_steps", integer(options.max_bad_steps)},
        {"fp8_format", options.fp8.format},
        {"fp8_scaling", fp8_scaling_name(options.fp8.scaling.scaling)},
        {"fp8_amax_history", integer(options.fp8.scaling.history_length)},
        {"fp8_amax_compute", amax_compute_name(options.fp8.scaling.amax_compute)},
        {"fp8_margin", integer(options.fp8.scaling.margin)},
        {"fp8_bf16_layers", options.fp8.bf16_layers},
        {"fp8_head", options.fp8.head ? "true" : "false"},
        {"seed", std::to_string(options.seed)},
        {"data_seed", std::to_string(options.data_seed.value_or(options.seed))},
        {"device", options.device},
        {"device_index", integer(options.device_index)},
        {"threads", integer(options.threads)},
        {"eval_interval", integer(options.eval_interval)},
        {"eval_batches", integer(options.eval_batches)},
        {"gradient_zero_stats", options.gradient_zero_stats ? "true" : "false"},
        {"checkpoint_interval", integer(options.checkpoint_interval)},
        {"keep_checkpoints", integer(options.keep_checkpoints)},
        {"output_dir", options.output_dir},
        {"zero_optimizer", options.zero_optimizer ? "true" : "false"},
        {"overlap_comm", options.overlap_comm ? "true" : "false"},
        {"bucket_mb", number(options.bucket_mb)},
        {"collective_timeout", number(options.collective_timeout)},
    };
    described.insert(described.end(), rest.begin(), rest.end());
    // Only with muon, so that an adamw run records what runs recorded before Muon existed (a
    // checkpoint without "optimizer" is AdamW's).
    if (options.optimizer == OptimizerKind::muon) {
        const std::vector<std::pair<std::string, std::string>> muon = {
            {"optimizer", optimizer_name(options.optimizer)},
            {"muon_lr", number(options.muon_lr)},
            {"muon_momentum", number(options.muon_momentum)},
            {"muon_nesterov", options.muon_nesterov ? "true" : "false"},
            {"muon_ns_steps", integer(options.muon_ns_steps)},
            {"muon_ns_precision", dtype_name(options.muon_ns_dtype)},
            {"muon_weight_decay", number(options.muon_weight_decay)},
            {"embedding_lr", number(muon_embedding_lr(options))},
            {"head_lr", number(muon_head_lr(options))},
        };
        described.insert(described.end(), muon.begin(), muon.end());
    }
    // Only with the guard on, so that a run without it records what runs recorded before it existed.
    if (options.skip_spikes > 0) {
        const std::vector<std::pair<std::string, std::string>> guard = {
            {"skip_spikes", number(options.skip_spikes)},
            {"spike_window", integer(options.spike_window)},
            {"max_spike_skips", integer(options.max_spike_skips)},
        };
        described.insert(described.end(), guard.begin(), guard.end());
    }
    if (options.telemetry_interval > 0) described.emplace_back("telemetry_interval", integer(options.telemetry_interval));
    return described;
}

bool is_run_mechanics(const std::string& name) {
    return name == "steps" || name == "tokens" || name == "zero_optimizer" || name == "overlap_comm" ||
           name == "bucket_mb" || name == "collective_timeout" || name == "output_dir" ||
           name == "gradient_zero_stats" || name == "telemetry_interval";
}

}  // namespace mixgpt
