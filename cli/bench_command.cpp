// `mixgpt bench`: flags (or a TOML file) onto BenchOptions; prints a table or JSON.
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/model_options.h"
#include "cli/number_checks.h"
#include "cli/path_checks.h"
#include "cli/threads_option.h"
#include "cli/toml_config.h"
#include "core/error.h"
#include "core/output_file.h"
#include "kernels/device_choice.h"
#include "study/benchmark.h"

namespace mixgpt::cli {
namespace {

struct BenchArguments {
    BenchOptions options;
    std::string precisions = "fp32,tf32,bf16,fp16";
    std::string recompute = "none";
    std::string attention = "flash";
    std::string exchange = "none";
    std::string optimizer = "adamw";
    bool json = false;
    std::string json_out;
};

std::vector<Precision> parse_precision_list(const std::string& text) {
    std::vector<Precision> precisions;
    std::stringstream stream(text);
    for (std::string name; std::getline(stream, name, ',');) precisions.push_back(parse_precision(name));
    return precisions;
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto arguments = std::make_shared<BenchArguments>();
    BenchOptions& o = arguments->options;
    CLI::App* command = app.add_subcommand(
        "bench", "training throughput per precision on random tokens: tokens/s, ms/step, MFU, peak memory");
    add_config_option(*command);
    add_model_options(*command, o.model);
    command->add_option("--vocab-size", o.vocab_size, "vocabulary size")->capture_default_str();
    command->add_option("--batch-size,-b", o.batch_size, "B")->capture_default_str();
    command->add_option("--seq-len,-t", o.seq_len, "T")->capture_default_str();
    command
        ->add_option("--precision", arguments->precisions, "comma-separated list of fp32, tf32, bf16, fp16, fp8")
        ->capture_default_str();
    command->add_option("--recompute", arguments->recompute, "none, selective or full")
        ->capture_default_str();
    command->add_option("--warmup-steps", o.warmup_steps, "untimed steps first")->capture_default_str();
    command->add_option("--steps", o.steps, "timed steps")->capture_default_str();
    command
        ->add_option("--peak-tflops", o.peak_tflops,
                     "peak TFLOP/s for MFU (default: looked up by device name)")
        ->check(positive());
    add_device_option(*command, o.device);
    command->add_option("--device-index", o.device_index, "CUDA device ordinal");
    command
        ->add_option("--attention", arguments->attention,
                     "CUDA attention kernels: flash (fused, bf16/fp16 with head_dim 64 or 128; fp32 "
                     "and tf32 as cuBLASLt products) or simple")
        ->check(CLI::IsMember({"flash", "simple"}))
        ->capture_default_str();
    command
        ->add_option("--gradient-exchange", arguments->exchange,
                     "CUDA: also time data parallelism's gradient exchange over a 1-rank NCCL communicator: "
                     "none, overlapped (buckets during the backward pass) or after-backward")
        ->check(CLI::IsMember({"none", "overlapped", "after-backward"}))
        ->capture_default_str();
    command->add_option("--bucket-mb", o.bucket_mb, "MiB of fp32 gradients per collective")
        ->capture_default_str();
    add_threads_option(*command, o.threads, "CPU threads (0: OpenMP's default)");
    command->add_option("--seed", o.seed, "seed of the weights and tokens")->capture_default_str();
    command
        ->add_option("--optimizer", arguments->optimizer,
                     "adamw, or muon (Muon with its defaults on the blocks' matrices, AdamW on the rest): the "
                     "step time each costs")
        ->check(CLI::IsMember({"adamw", "muon"}))
        ->capture_default_str();
    command
        ->add_option("--telemetry-interval", o.telemetry_interval,
                     "N: measure every N-th step as train --telemetry-interval does (the cost of telemetry; "
                     "default 0: none)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    command->add_flag("--profile", o.profile,
                      "also print where each precision's step goes, per op (on CUDA every op is "
                      "synchronized, so the profiled step is slower)");
    command->add_flag("--json", arguments->json, "print one JSON object");
    command->add_option("--json-out", arguments->json_out, "also write the JSON object to this file")
        ->check(names_a_file());
    command->callback([arguments] {
        BenchOptions& options = arguments->options;
        options.precisions = parse_precision_list(arguments->precisions);
        options.recompute = parse_recompute(arguments->recompute);
        options.flash_attention = arguments->attention == "flash";
        options.exchange = parse_gradient_exchange(arguments->exchange);
        options.optimizer = parse_optimizer(arguments->optimizer);
        options.device = resolve_device(options.device, options.device_index);
        std::optional<OutputFile> json_out;  // opened first: a path that cannot be written fails at once
        if (!arguments->json_out.empty())
            json_out.emplace(arguments->json_out, std::vector<std::string>{}, "--json-out");
        const std::vector<BenchResult> results = run_benchmark(options);
        const std::string json = bench_json(options, results) + "\n";
        std::cout << (arguments->json ? json : bench_table(options, results));
        if (json_out) json_out->write(json);
    });
}

}  // namespace mixgpt::cli
