#include "study/precision_study.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/directory_lock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/output_file.h"
#include "dist/mpi_launch.h"
#include "kernels/device_choice.h"
#include "study/benchmark.h"
#include "study/study_report.h"
#include "study/study_run_settings.h"
#include "tokenizer/dataset.h"
#include "tokenizer/dataset_path.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

// The steps a complete run recorded in its study_run.json; -1 when it has none.
int64_t recorded_steps(const std::string& path) {
    std::ifstream file(path);
    if (!file.good()) return -1;
    try {
        return nlohmann::json::parse(file).at("steps").get<int64_t>();
    } catch (const nlohmann::json::exception&) {
        return -1;
    }
}

TrainOptions run_options(const StudyOptions& options, const StudyVariant& variant, uint64_t seed) {
    TrainOptions train = options.train;
    train.output_dir = study_run_directory(options, variant, seed);
    train.seed = seed;
    train.data_seed = options.train.data_seed.value_or(options.train.seed);
    train.precision = variant.precision;
    train.loss_scale = variant.loss_scale;
    train.stochastic_rounding = variant.stochastic_rounding;
    train.fp8.scaling.scaling = variant.fp8_scaling;
    train.fp8.head = variant.fp8_head;
    train.optimizer = variant.optimizer;
    train.muon_ns_dtype = variant.muon_ns_dtype;
    train.gradient_zero_stats = true;
    if (train.telemetry_interval == 0) train.telemetry_interval = train.eval_interval;  // at each evaluation
    train.resume = "if-present";
    if (train.checkpoint_interval == 0) train.checkpoint_interval = train.eval_interval;
    return train;
}

StudyBench bench_precision(const StudyOptions& options, Precision precision, int vocab_size) {
    const TrainOptions& train = options.train;
    BenchOptions bench;
    bench.model = train.model;
    bench.vocab_size = vocab_size;
    bench.batch_size = train.batch_size;
    bench.seq_len = train.seq_len;
    bench.precisions = {precision};
    bench.recompute = train.recompute;
    bench.warmup_steps = 1;
    bench.steps = options.bench_steps;
    bench.device = train.device;
    bench.device_index = train.device_index;
    bench.threads = train.threads;
    bench.seed = train.seed;
    const BenchResult result = run_benchmark(bench).front();
    StudyBench measured;
    measured.tokens_per_second = result.tokens_per_second;
    measured.ms_per_step = result.ms_per_step;
    measured.peak_memory_bytes = result.peak_memory_bytes;
    measured.device = result.device_name;
    measured.emulated = result.emulated;
    return measured;
}

// scripts/plot_study.py of the repository the binary was built in: in the folders above the
// binary (build/, or build/asan/ for `make test-sanitize`), nearest first, run with Debian's
// Python; a warning with the command when it is missing or fails.
void plot_figures(const std::string& report_path) {
    std::error_code error;
    const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
    std::filesystem::path script;
    for (std::filesystem::path folder = executable.parent_path(); !error && folder.has_relative_path();
         folder = folder.parent_path()) {
        if (std::filesystem::exists(folder / "scripts" / "plot_study.py")) {
            script = folder / "scripts" / "plot_study.py";
            break;
        }
    }
    const std::string command = "/usr/bin/python3 '" + script.string() + "' '" + report_path + "'";
    if (error || script.empty()) {
        log_warning("no figures: scripts/plot_study.py not found beside " + executable.string() +
                    "; run it on " + report_path);
        return;
    }
    if (std::system((command + " >/dev/null").c_str()) != 0)
        log_warning("the figures failed (needs python3-matplotlib); retry with: " + command);
}

}  // namespace

const std::vector<StudyVariant>& study_variants() {
    static const std::vector<StudyVariant> variants = {
        {"fp32", Precision::fp32, "none", false, "fp32 throughout (the reference)"},
        {"tf32", Precision::tf32, "none", false, "matrix products with tf32 inputs"},
        {"bf16", Precision::bf16, "none", false, "bf16 working weights and activations, fp32 masters"},
        {"fp16", Precision::fp16, "dynamic", false, "fp16 with dynamic loss scaling"},
        {"fp16-noscale", Precision::fp16, "none", false, "fp16 without loss scaling (a control)"},
        {"bf16-sr", Precision::bf16, "none", true, "bf16 with stochastic rounding of the working weights"},
        {"fp8", Precision::fp8, "none", false, "fp8 linear layers (E4M3/E5M2), delayed per-tensor scaling"},
        {"fp8-current", Precision::fp8, "none", false, "fp8 linear layers, current per-tensor scaling",
         Fp8Scaling::current, false},
        {"fp8-head", Precision::fp8, "none", false, "fp8 linear layers and output head, delayed scaling",
         Fp8Scaling::delayed, true},
    };
    return variants;
}

std::vector<StudyVariant> parse_study_variants(const std::string& list) {
    std::vector<StudyVariant> chosen;
    std::stringstream stream(list);
    for (std::string name; std::getline(stream, name, ',');) {
        const StudyVariant* found = nullptr;
        for (const StudyVariant& variant : study_variants())
            if (variant.name == name) found = &variant;
        MIXGPT_REQUIRE(found != nullptr,
                       "precisions: unknown run '" + name +
                           "' (choose from fp32, tf32, bf16, fp16, fp16-noscale, bf16-sr, fp8, "
                           "fp8-current, fp8-head)");
        for (const StudyVariant& already : chosen)
            MIXGPT_REQUIRE(already.name != name, "precisions: '" + name + "' is listed twice");
        chosen.push_back(*found);
    }
    MIXGPT_REQUIRE(!chosen.empty(), "precisions: name at least one run");
    // Report order, the fp32 reference first.
    std::vector<StudyVariant> ordered;
    for (const StudyVariant& variant : study_variants())
        for (const StudyVariant& picked : chosen)
            if (picked.name == variant.name) ordered.push_back(picked);
    return ordered;
}

std::vector<StudyVariant> parse_optimizer_variants(const std::string& list, const StudyVariant& precision) {
    std::vector<StudyVariant> chosen;
    std::stringstream stream(list);
    for (std::string name; std::getline(stream, name, ',');) {
        StudyVariant variant = precision;
        variant.name = name;
        if (name == "adamw") {
            variant.description = "AdamW on every parameter at --lr";
        } else if (name == "muon" || name == "muon-fp32") {
            variant.optimizer = OptimizerKind::muon;
            variant.muon_ns_dtype = name == "muon" ? DType::bf16 : DType::f32;
            variant.description = std::string("Muon on the blocks' matrices (") +
                                  (name == "muon" ? "bf16" : "fp32") +
                                  " Newton-Schulz) at --muon-lr, AdamW on the rest";
        } else {
            throw Error("optimizers: unknown run '" + name + "' (choose from adamw, muon, muon-fp32)");
        }
        variant.description += " (" + precision.name + ")";
        for (const StudyVariant& already : chosen)
            MIXGPT_REQUIRE(already.name != name, "optimizers: '" + name + "' is listed twice");
        chosen.push_back(variant);
    }
    MIXGPT_REQUIRE(!chosen.empty(), "optimizers: name at least one run");
    return chosen;
}

std::vector<uint64_t> study_seeds(const StudyOptions& options) {
    std::vector<uint64_t> seeds;
    for (int index = 0; index < options.seeds; ++index) seeds.push_back(options.train.seed + index);
    return seeds;
}

std::string study_run_name(const StudyOptions& options, const StudyVariant& variant, uint64_t seed) {
    if (options.seeds == 1) return variant.name;
    return variant.name + "/seed-" + std::to_string(seed);
}

std::string study_run_directory(const StudyOptions& options, const StudyVariant& variant, uint64_t seed) {
    return (std::filesystem::path(options.output_dir) / study_run_name(options, variant, seed)).string();
}

bool run_study(const StudyOptions& asked) {
    StudyOptions options = asked;  // the device decided once, for every run and bench
    options.train.device = resolve_device(asked.train.device, asked.train.device_index);
    MIXGPT_REQUIRE(!options.variants.empty(), "precisions: name at least one run");
    MIXGPT_REQUIRE(launcher_world_size() == 1, "study: runs as one process (not under mpirun or srun)");
    MIXGPT_REQUIRE(options.bench_steps >= 1, "bench-steps: must be at least 1");
    MIXGPT_REQUIRE(options.seeds >= 1 && options.seeds <= 100, "seeds: must be between 1 and 100");
    MIXGPT_REQUIRE(options.train.eval_interval > 0,
                   "eval-interval: must be positive (the study compares runs at every evaluation)");
    MIXGPT_REQUIRE(!options.train.dataset.empty(),
                   "dataset: required (a directory or file from `mixgpt prepare`)");
    // Recorded in every run's checkpoints: the same dataset wherever the study is started from.
    options.train.dataset = std::filesystem::absolute(asked.train.dataset).lexically_normal().string();
    const DatasetInfo dataset = read_checked_dataset_info(resolve_dataset_path(options.train.dataset));
    const std::vector<uint64_t> seeds = study_seeds(options);
    const TrainPlan plan = plan_training(run_options(options, options.variants.front(), seeds.front()),
                                         dataset.vocab_size, 1, dataset.eot_id);
    const std::string identity = dataset_identity(dataset.path);
    for (const StudyVariant& variant : options.variants)
        for (const uint64_t seed : seeds)
            require_study_run_settings(study_run_directory(options, variant, seed),
                                       run_options(options, variant, seed), identity);
    const DirectoryLock lock(options.output_dir);  // before anything is written: one study per folder

    const int count = static_cast<int>(options.variants.size() * seeds.size());
    int index = 0;
    std::map<Precision, StudyBench> benches;  // measured once per precision by this process
    for (const StudyVariant& variant : options.variants)
        for (const uint64_t seed : seeds) {
            ++index;
            const TrainOptions train = run_options(options, variant, seed);
            const std::string name = study_run_name(options, variant, seed);
            const std::string record = (std::filesystem::path(train.output_dir) / "study_run.json").string();
            if (recorded_steps(record) == plan.total_steps) {
                log_info(format("study: run %d of %d, %s: complete, kept", index, count, name.c_str()));
                continue;
            }
            log_info(format("study: run %d of %d, %s (%s), %lld steps", index, count, name.c_str(),
                            variant.description.c_str(), static_cast<long long>(plan.total_steps)));
            const TrainResult result = run_training(train);
            if (result.stopped_by_signal) {
                log_info("study: stopped by a signal; run the same command again to continue");
                return false;
            }
            if (benches.count(variant.precision) == 0) {
                log_info(format("study: bench of %s, %d timed steps", precision_name(variant.precision),
                                options.bench_steps));
                benches[variant.precision] = bench_precision(options, variant.precision, dataset.vocab_size);
            }
            write_whole_file(record, study_bench_json(benches[variant.precision], result.steps_done));
        }

    StudyReport report;
    report.dataset = dataset.path;
    report.model = options.train.model.preset;
    report.arch = arch_name(plan.model.arch);
    report.n_layer = plan.model.n_layer;
    report.n_head = plan.model.n_head;
    report.n_embd = plan.model.n_embd;
    report.batch_size = options.train.batch_size;
    report.seq_len = options.train.seq_len;
    report.steps = plan.total_steps;
    report.tokens_per_run = plan.total_steps * plan.tokens_per_step;
    report.seeds = seeds;
    report.data_seed = options.train.data_seed.value_or(options.train.seed);
    report.bytes_per_token = static_cast<double>(dataset.val.bytes) / static_cast<double>(dataset.val.tokens);
    report.optimizers = options.optimizers;
    for (const StudyVariant& variant : options.variants)
        for (const uint64_t seed : seeds)
            report.runs.push_back(summarize_study_run(options.output_dir,
                                                      study_run_name(options, variant, seed), variant, seed,
                                                      report.bytes_per_token));
    compare_runs(report);
    const std::string json_path = (std::filesystem::path(options.output_dir) / "report.json").string();
    const std::string markdown_path = (std::filesystem::path(options.output_dir) / "report.md").string();
    write_whole_file(json_path, study_report_json(report));
    write_whole_file(markdown_path, study_report_markdown(report));
    plot_figures(json_path);
    log_info("study: report " + markdown_path + " and " + json_path);
    return true;
}

}  // namespace mixgpt
