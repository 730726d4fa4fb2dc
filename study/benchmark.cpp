#include "study/benchmark.h"

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "core/error.h"
#include "core/log.h"
#include "model/gpt.h"
#include "model/parameters.h"
#include "dist/communicator.h"
#include "dist/device_communicator.h"
#include "model/flops.h"
#include "train/loss_scaling.h"
#include "train/memory_check.h"
#include "train/telemetry.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

GPTConfig bench_config(const BenchOptions& options) {
    return model_config(options.model, options.vocab_size, options.seq_len);
}

constexpr double kCollectiveTimeoutSeconds = 600;

// Which attention kernels were asked for: the CPU backend has only its reference implementation.
const char* attention_kernels(const BenchOptions& options) {
    if (options.device != "cuda") return "reference";
    return options.flash_attention ? "flash" : "simple";
}

// The same for people: the CUDA backend runs the flash kernels and the fp32 products only where
// they apply.
const char* attention_description(const BenchOptions& options) {
    if (options.device == "cuda" && options.flash_attention)
        return "flash attention (bf16/fp16 with head_dim 64 or 128; fp32 as cuBLASLt products; the simple "
               "kernels otherwise)";
    return options.device == "cuda" ? "simple attention" : "reference attention";
}

BenchResult bench_precision(const BenchOptions& options, const GPTConfig& config, Precision precision,
                            const std::vector<int32_t>& windows) {
    BackendOptions backend_options;
    backend_options.device = options.device;
    backend_options.device_index = options.device_index;
    backend_options.precision = precision;
    backend_options.threads = options.threads;
    backend_options.flash_attention = options.flash_attention;
    std::unique_ptr<Backend> backend = make_backend(backend_options);
    OpProfiler* profiler = nullptr;
    if (options.profile) {
        auto wrapped = std::make_unique<OpProfiler>(std::move(backend));
        profiler = wrapped.get();
        backend = std::move(wrapped);
    }
    std::optional<MuonPlan> muon;
    if (options.optimizer == OptimizerKind::muon) {
        muon.emplace();
        muon->base_lr = muon->embedding_lr = muon->head_lr = 1e-4f;  // AdamW's groups, as below
    }
    require_memory_fits(*backend, config, options.batch_size, options.seq_len, options.recompute, nullptr,
                        muon ? muon_iterate_bytes(config, muon->hyper.ns_dtype) : 0);
    GPT model(*backend, config, options.batch_size, options.seq_len, options.recompute);
    const std::vector<float> initial = init_parameters(config, model.layout(), options.seed);
    model.load_master_parameters(initial.data(), static_cast<int64_t>(initial.size()));
    const LossScalePolicy loss_scale = parse_loss_scale("auto", precision);
    std::unique_ptr<Communicator> communicator = std::make_unique<SingleProcessCommunicator>();
    DataParallelConfig parallel;
    if (options.exchange != GradientExchange::none) {
        communicator = make_nccl_communicator(std::move(communicator), *backend, kCollectiveTimeoutSeconds);
        parallel.overlap = options.exchange == GradientExchange::overlapped;
        parallel.bucket_bytes = static_cast<size_t>(options.bucket_mb * (1 << 20));
    }
    TrainStep step(model, *communicator, 1, loss_scale.config(), loss_scale.initial_status(), parallel, muon);
    AdamWHyper hyper;
    hyper.learning_rate = 1e-4f;

    std::optional<Telemetry> telemetry;
    if (options.telemetry_interval > 0) telemetry.emplace(model, *backend, options.telemetry_interval, *communicator);
    int64_t steps_done = 0;
    const auto run_steps = [&](int count) {
        for (int i = 0; i < count; ++i, ++steps_done) {
            const bool measured = telemetry && telemetry->due(steps_done);
            const float loss_scale = measured ? step.read_status().loss_scale : 1.f;
            if (measured) telemetry->before_step();
            step.begin();
            step.micro_step(windows.data());
            step.finish(hyper);
            if (measured) telemetry->after_step(steps_done + 1, loss_scale, step.kept_gradients());
        }
    };
    run_steps(options.warmup_steps);
    backend->synchronize();
    if (profiler != nullptr) profiler->reset();
    const auto start = std::chrono::steady_clock::now();
    run_steps(options.steps);
    backend->synchronize();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    BenchResult result;
    result.precision = precision;
    result.device_name = backend->name();
    result.emulated = options.device == "cpu" && precision != Precision::fp32;
    result.ms_per_step = seconds * 1e3 / options.steps;
    result.tokens_per_second =
        static_cast<double>(options.batch_size) * options.seq_len * options.steps / seconds;
    result.achieved_tflops =
        training_flops_per_token(config, options.seq_len) * result.tokens_per_second / 1e12;
    result.peak_tflops =
        options.peak_tflops > 0 ? options.peak_tflops : peak_tflops(result.device_name, precision);
    result.mfu = model_flops_utilization(config, options.seq_len, result.tokens_per_second, result.peak_tflops);
    result.peak_memory_bytes = backend->peak_memory_bytes();
    result.last_loss = step.result().loss;
    if (profiler != nullptr) result.profile = profiler->times();
    return result;
}

// Per op: calls and milliseconds per step, share of the step; then what the ops do not account for.
std::string profile_table(const BenchResult& result, int steps) {
    std::string text =
        format("\nwhere a %s step goes (%d timed steps, per step%s)\n", precision_name(result.precision),
               steps, result.device_name.rfind("cuda", 0) == 0 ? ", synchronized around every op" : "");
    text += format("%-40s %8s %10s %7s\n", "op", "calls", "ms", "share");
    double in_ops = 0;
    for (const OpTime& time : result.profile) {
        const double ms = time.seconds * 1e3 / steps;
        in_ops += ms;
        text += format("%-40s %8.1f %10.2f %6.1f%%\n", time.op.c_str(),
                       static_cast<double>(time.calls) / steps, ms, 100 * ms / result.ms_per_step);
    }
    const double outside = result.ms_per_step - in_ops;
    text += format("%-40s %8s %10.2f %6.1f%%\n", "(outside the ops: trainer, host work)", "", outside,
                   100 * outside / result.ms_per_step);
    return text;
}

}  // namespace

GradientExchange parse_gradient_exchange(const std::string& text) {
    if (text == "none") return GradientExchange::none;
    if (text == "overlapped") return GradientExchange::overlapped;
    if (text == "after-backward") return GradientExchange::after_backward;
    throw Error("gradient-exchange: '" + text + "' is not one of none, overlapped, after-backward");
}

const char* gradient_exchange_name(GradientExchange exchange) {
    switch (exchange) {
        case GradientExchange::none:
            return "none";
        case GradientExchange::overlapped:
            return "overlapped";
        case GradientExchange::after_backward:
            return "after-backward";
    }
    return "?";
}

std::vector<BenchResult> run_benchmark(const BenchOptions& options) {
    MIXGPT_REQUIRE(options.batch_size >= 1 && options.seq_len >= 1,
                   "batch-size, seq-len: must be at least 1");
    MIXGPT_REQUIRE(options.warmup_steps >= 0, "warmup-steps: must not be negative");
    MIXGPT_REQUIRE(options.steps >= 1, "steps: must be at least 1");
    MIXGPT_REQUIRE(!options.precisions.empty(), "precision: give at least one");
    MIXGPT_REQUIRE(options.vocab_size >= 1, "vocab-size: must be at least 1");
    MIXGPT_REQUIRE(options.exchange == GradientExchange::none || options.device == "cuda",
                   "gradient-exchange: times NCCL, so it needs --device cuda");
    MIXGPT_REQUIRE(options.bucket_mb > 0, "bucket-mb: must be positive");
    const GPTConfig config = bench_config(options);

    std::mt19937_64 random(options.seed);
    std::vector<int32_t> windows(static_cast<size_t>(options.batch_size) * (options.seq_len + 1));
    for (int32_t& token : windows)
        token = static_cast<int32_t>(random() % static_cast<uint64_t>(config.vocab_size));

    std::vector<BenchResult> results;
    for (Precision precision : options.precisions) {
        log_info(format("bench %s: %d warm-up and %d timed steps of B=%d, T=%d", precision_name(precision),
                        options.warmup_steps, options.steps, options.batch_size, options.seq_len));
        results.push_back(bench_precision(options, config, precision, windows));
    }
    return results;
}

std::string bench_table(const BenchOptions& options, const std::vector<BenchResult>& results) {
    const GPTConfig config = bench_config(options);
    std::string text =
        format("model %s %s (%.2fM parameters), B=%d, T=%d, recompute %s, %s, %s, %.3g model GFLOP per token\n",
               options.model.preset.c_str(), arch_name(config.arch),
               static_cast<double>(config.num_parameters()) / 1e6, options.batch_size, options.seq_len,
               recompute_name(options.recompute), attention_description(options), optimizer_name(options.optimizer),
               training_flops_per_token(config, options.seq_len) / 1e9);
    if (options.exchange != GradientExchange::none)
        text += format("gradient exchange: 1-rank NCCL, %.4g MiB buckets, %s\n", options.bucket_mb,
                       gradient_exchange_name(options.exchange));
    text += format("%-9s %12s %12s %10s %10s %8s %12s  %s\n", "precision", "tokens/s", "ms/step", "TFLOP/s",
                   "peak", "MFU", "peak MiB", "device");
    bool any_emulated = false;
    for (const BenchResult& r : results) {
        any_emulated = any_emulated || r.emulated;
        const std::string peak = r.peak_tflops > 0 ? format("%.1f", r.peak_tflops) : "-";
        const std::string mfu = std::isnan(r.mfu) ? "-" : format("%.1f%%", 100.0 * r.mfu);
        text += format("%-9s %12.1f %12.2f %10.3f %10s %8s %12.1f  %s%s\n", precision_name(r.precision),
                       r.tokens_per_second, r.ms_per_step, r.achieved_tflops, peak.c_str(), mfu.c_str(),
                       static_cast<double>(r.peak_memory_bytes) / (1 << 20), r.device_name.c_str(),
                       r.emulated ? " (emulated)" : "");
    }
    if (any_emulated)
        text +=
            "emulated: the CPU backend computes in fp32 on tf32/bf16/fp16-rounded storage; these rows "
            "measure "
            "the rounding's cost, not hardware support\n";
    if (results.empty() || results.front().peak_tflops <= 0)
        text += "MFU needs a peak: unknown for this device; give --peak-tflops\n";
    for (const BenchResult& r : results)
        if (!r.profile.empty()) text += profile_table(r, options.steps);
    return text;
}

std::string bench_json(const BenchOptions& options, const std::vector<BenchResult>& results) {
    const GPTConfig config = bench_config(options);
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const BenchResult& r : results) {
        rows.push_back(
            {{"precision", precision_name(r.precision)},
             {"device", r.device_name},
             {"emulated", r.emulated},
             {"tokens_per_second", r.tokens_per_second},
             {"ms_per_step", r.ms_per_step},
             {"achieved_tflops", r.achieved_tflops},
             {"peak_tflops", r.peak_tflops > 0 ? nlohmann::ordered_json(r.peak_tflops) : nlohmann::ordered_json(nullptr)},
             {"mfu", std::isnan(r.mfu) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.mfu)},
             {"peak_memory_bytes", r.peak_memory_bytes},
             {"last_loss", r.last_loss}});
        if (!r.profile.empty()) {
            nlohmann::ordered_json profile = nlohmann::ordered_json::array();
            for (const OpTime& time : r.profile)
                profile.push_back({{"op", time.op},
                                   {"calls_per_step", static_cast<double>(time.calls) / options.steps},
                                   {"ms_per_step", time.seconds * 1e3 / options.steps}});
            rows.back()["profile"] = profile;
        }
    }
    const nlohmann::ordered_json json = {
        {"model", options.model.preset},
        {"arch", arch_name(config.arch)},
        {"optimizer", optimizer_name(options.optimizer)},
        {"n_layer", config.n_layer},
        {"n_head", config.n_head},
        {"n_kv_head", config.kv_heads()},
        {"n_embd", config.n_embd},
        {"ffn_hidden", config.mlp_hidden()},
        {"tie_embeddings", config.tie_embeddings},
        {"vocab_size", config.vocab_size},
        {"parameters", config.num_parameters()},
        {"batch_size", options.batch_size},
        {"seq_len", options.seq_len},
        {"recompute", recompute_name(options.recompute)},
        {"attention", attention_kernels(options)},
        {"gradient_exchange", gradient_exchange_name(options.exchange)},
        {"bucket_mb", options.bucket_mb},
        {"warmup_steps", options.warmup_steps},
        {"steps", options.steps},
        {"flops_per_token", training_flops_per_token(config, options.seq_len)},
        {"results", rows}};
    return json.dump(2);
}

}  // namespace mixgpt
