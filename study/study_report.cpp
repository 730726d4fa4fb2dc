#include "study/study_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using Json = nlohmann::ordered_json;

double number_or_nan(const Json& value) { return value.is_number() ? value.get<double>() : kNaN; }

double median(std::vector<double> values) {
    if (values.empty()) return kNaN;
    std::sort(values.begin(), values.end());
    const size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

struct RunMetrics {
    std::map<int64_t, Json> train, eval, telemetry;  // by step; a later line for a step replaces an earlier one
    std::vector<double> tokens_per_second, ms_per_step;  // of the steps after each process's first
};

RunMetrics read_run_metrics(const std::string& path) {
    std::ifstream file(path);
    MIXGPT_REQUIRE(file.good(), path + ": cannot read the run's metrics");
    RunMetrics metrics;
    bool first_step_of_process = true;
    int line_number = 0;
    for (std::string line; std::getline(file, line);) {
        ++line_number;
        if (line.empty()) continue;
        Json record;
        try {
            record = Json::parse(line);
        } catch (const Json::exception&) {
            throw Error(format("%s:%d: not a JSON object", path.c_str(), line_number));
        }
        MIXGPT_REQUIRE(
            record.is_object() && record.contains("type") && record.contains("step"),
            format("%s:%d: a metrics line needs \"type\" and \"step\"", path.c_str(), line_number));
        const std::string type = record["type"].get<std::string>();
        const int64_t step = record["step"].get<int64_t>();
        if (type == "resume") {
            first_step_of_process = true;
        } else if (type == "train") {
            if (!first_step_of_process) {
                metrics.tokens_per_second.push_back(number_or_nan(record["tokens_per_second"]));
                metrics.ms_per_step.push_back(number_or_nan(record["ms_per_step"]));
            }
            first_step_of_process = false;
            metrics.train[step] = std::move(record);
        } else if (type == "eval") {
            metrics.eval[step] = std::move(record);
        } else if (type == "telemetry") {
            metrics.telemetry[step] = std::move(record);
        }
    }
    MIXGPT_REQUIRE(!metrics.train.empty(), path + ": holds no training step");
    return metrics;
}

double bits_per_byte(double nats_per_token, double bytes_per_token) {
    return nats_per_token / std::log(2.0) / bytes_per_token;
}

Json departure_json(const TelemetryDeparture& departure) {
    if (departure.layer < 0) return nullptr;
    return {{"layer", departure.layer}, {"step", departure.step}, {"value", departure.value}};
}

Json run_json(const StudyRunSummary& run) {
    Json scale_changes = Json::array();
    for (const auto& [step, scale] : run.loss_scale_changes) scale_changes.push_back({step, scale});
    Json evaluations = Json::array();
    for (const StudyEvalPoint& point : run.evaluations) {
        Json entry = {{"step", point.step},
                      {"val_loss", point.val_loss},
                      {"gap_to_fp32", point.gap_to_fp32},
                      {"train_seconds", point.train_seconds}};
        if (point.grad_zero_fraction >= 0) entry["grad_zero_fraction"] = point.grad_zero_fraction;
        evaluations.push_back(entry);
    }
    return {{"name", run.variant.name},
            {"seed", run.seed},
            {"description", run.variant.description},
            {"precision", precision_name(run.variant.precision)},
            {"loss_scale", run.variant.loss_scale},
            {"stochastic_rounding", run.variant.stochastic_rounding},
            {"optimizer", optimizer_name(run.variant.optimizer)},
            {"muon_ns_precision", dtype_name(run.variant.muon_ns_dtype)},
            {"steps_to_target", run.steps_to_target},
            {"seconds_to_target", run.seconds_to_target},
            {"directory", run.directory},
            {"steps", run.steps},
            {"tokens", run.tokens},
            {"final_val_loss", run.final_val_loss},
            {"best_val_loss", run.best_val_loss},
            {"best_step", run.best_step},
            {"final_perplexity", run.final_perplexity},
            {"final_bits_per_byte", run.final_bits_per_byte},
            {"best_bits_per_byte", run.best_bits_per_byte},
            {"train_tokens_per_second", run.train_tokens_per_second},
            {"train_ms_per_step", run.train_ms_per_step},
            {"peak_memory_bytes", run.peak_memory_bytes},
            {"skipped_steps", run.skipped_steps},
            {"loss_scale_changes", scale_changes},
            {"final_loss_scale", run.final_loss_scale},
            {"bench",
             {{"tokens_per_second", run.bench.tokens_per_second},
              {"ms_per_step", run.bench.ms_per_step},
              {"peak_memory_bytes", run.bench.peak_memory_bytes},
              {"device", run.bench.device},
              {"emulated", run.bench.emulated}}},
            {"evaluations", evaluations},
            {"telemetry_departures",
             {{"output_amax_ratio", departure_json(run.departures.amax)},
              {"grad_underflow_excess", departure_json(run.departures.underflow)},
              {"fp8_least_headroom_bits", departure_json(run.departures.fp8_headroom)}}}};
}


// Speed figures carry their caveat on the CPU, where reduced precisions are emulated.
std::string speed(double value, const char* pattern, bool emulated) {
    return format(pattern, value) + (emulated ? " (emulated)" : "");
}

std::string mib(size_t bytes) { return format("%.1f MiB", static_cast<double>(bytes) / (1 << 20)); }

const StudyRunSummary* fp32_run(const StudyReport& report, uint64_t seed) {
    for (const StudyRunSummary& run : report.runs)
        if (run.variant.name == "fp32" && run.seed == seed) return &run;
    return nullptr;
}

// The run of the study's first variant with `seed`: what an optimizer study measures the others by.
const StudyRunSummary* first_run(const StudyReport& report, uint64_t seed) {
    for (const StudyRunSummary& run : report.runs)
        if (run.variant.name == report.runs.front().variant.name && run.seed == seed) return &run;
    return nullptr;
}

const StudySeedSpread* spread_of(const StudyReport& report, const std::string& name) {
    for (const StudySeedSpread& spread : report.spreads)
        if (spread.variant.name == name) return &spread;
    return nullptr;
}

std::string percent_gap(double value, double reference) {
    return format("%+.2f%%", 100.0 * (value - reference) / reference);
}

std::string relative_gap(const StudyRunSummary& run, const StudyRunSummary* reference) {
    if (reference == nullptr) return "—";
    if (&run == reference) return "reference";
    return percent_gap(run.final_val_loss, reference->final_val_loss);
}

// "fp8", or "fp8 (seed 1338)" in a study of several seeds.
std::string run_label(const StudyReport& report, const StudyRunSummary& run) {
    if (report.seeds.size() <= 1) return run.variant.name;
    return run.variant.name + format(" (seed %llu)", static_cast<unsigned long long>(run.seed));
}

std::string seed_list(const std::vector<uint64_t>& seeds) {
    std::string text;
    for (size_t i = 0; i < seeds.size(); ++i) text += (i ? ", " : "") + std::to_string(seeds[i]);
    return text;
}

StudySeedSpread spread_over_seeds(const StudyVariant& variant, const std::vector<double>& losses) {
    StudySeedSpread spread;
    spread.variant = variant;
    spread.final_val_losses = losses;
    double sum = 0;
    for (const double loss : losses) sum += loss;
    spread.mean = sum / static_cast<double>(losses.size());
    double squares = 0;
    for (const double loss : losses) squares += (loss - spread.mean) * (loss - spread.mean);
    spread.standard_deviation =
        losses.size() > 1 ? std::sqrt(squares / static_cast<double>(losses.size() - 1)) : 0;
    spread.min = *std::min_element(losses.begin(), losses.end());
    spread.max = *std::max_element(losses.begin(), losses.end());
    return spread;
}

Json spread_json(const StudySeedSpread& spread) {
    return {{"name", spread.variant.name},
            {"final_val_loss",
             {{"mean", spread.mean},
              {"standard_deviation", spread.standard_deviation},
              {"min", spread.min},
              {"max", spread.max},
              {"per_seed", spread.final_val_losses}}}};
}

// The spread table of a study of several seeds, with the gap of each mean to fp32's and bf16's
// means where the study has them.
std::string spread_markdown(const StudyReport& report) {
    const StudySeedSpread* fp32 = spread_of(report, "fp32");
    const StudySeedSpread* bf16 = spread_of(report, "bf16");
    std::string text = format("\n## Final validation loss over %zu seeds\n\n", report.seeds.size());
    text += "Mean ± sample standard deviation over the seeds (" + seed_list(report.seeds) +
            "); every run has the data order of seed " + std::to_string(report.data_seed) + ".\n\n";
    std::string header = "| run | mean ± sd | min – max |";
    std::string rule = "|---|---|---|";
    for (const StudySeedSpread* reference : {fp32, bf16})
        if (reference != nullptr) {
            header += " vs " + reference->variant.name + " mean |";
            rule += "---|";
        }
    text += header + " per seed |\n" + rule + "---|\n";
    for (const StudySeedSpread& spread : report.spreads) {
        text += format("| %s | %.4f ± %.4f | %.4f – %.4f |", spread.variant.name.c_str(), spread.mean,
                       spread.standard_deviation, spread.min, spread.max);
        for (const StudySeedSpread* reference : {fp32, bf16})
            if (reference != nullptr)
                text += " " +
                        (reference == &spread ? std::string("reference")
                                              : percent_gap(spread.mean, reference->mean)) +
                        " |";
        std::string per_seed;
        for (const double loss : spread.final_val_losses)
            per_seed += (per_seed.empty() ? "" : ", ") + format("%.4f", loss);
        text += " " + per_seed + " |\n";
    }
    return text;
}

// Each variant's gap to fp32 at every evaluation, averaged over the seeds.
std::string gap_markdown(const StudyReport& report, const StudyRunSummary& reference) {
    std::string text =
        report.seeds.size() > 1
            ? "\n## Validation-loss gap to fp32 at each evaluation (mean over the seeds)\n\n| step |"
            : "\n## Validation-loss gap to fp32 at each evaluation\n\n| step |";
    std::string rule = "|---|";
    for (const StudySeedSpread& spread : report.spreads) {
        text += " " + spread.variant.name + " |";
        rule += "---|";
    }
    text += "\n" + rule + "\n";
    for (size_t e = 0; e < reference.evaluations.size(); ++e) {
        text += format("| %lld |", static_cast<long long>(reference.evaluations[e].step));
        for (const StudySeedSpread& spread : report.spreads) {
            double sum = 0;
            int count = 0;
            for (const StudyRunSummary& run : report.runs)
                if (run.variant.name == spread.variant.name && e < run.evaluations.size() &&
                    !std::isnan(run.evaluations[e].gap_to_fp32)) {
                    sum += run.evaluations[e].gap_to_fp32;
                    ++count;
                }
            text += count > 0 ? format(" %+.4f |", sum / count) : std::string(" — |");
        }
        text += "\n";
    }
    return text;
}

// An optimizer study: the steps and training seconds each run needs to reach the first variant's
// final validation loss (its own seed's), and their ratio to the first variant's whole run.
std::string target_markdown(const StudyReport& report) {
    const std::string first = report.runs.front().variant.name;
    std::string text = "\n## Steps to " + first + "'s final validation loss\n\n";
    text += "The first evaluation at which each run's validation loss is at most the final one of the " +
            first +
            " run of its seed (evaluations every few steps: the step is rounded up to one); its training "
            "seconds are the run's steps' times summed up to it. Ratios: over " +
            first +
            "'s whole run (its steps, its seconds).\n\n"
            "| run | steps | steps ratio | training seconds | seconds ratio | ms/step |\n"
            "|---|---|---|---|---|---|\n";
    for (const StudyRunSummary& run : report.runs) {
        const StudyRunSummary* reference = first_run(report, run.seed);
        const double reference_seconds = reference->evaluations.back().train_seconds;
        const bool reached = run.steps_to_target >= 0;
        text += format("| %s | %s | %s | %s | %s | %.1f |\n", run_label(report, run).c_str(),
                       reached ? std::to_string(run.steps_to_target).c_str() : "not reached",
                       reached ? format("%.2f", static_cast<double>(run.steps_to_target) /
                                                    static_cast<double>(reference->steps))
                                     .c_str()
                               : "—",
                       reached ? format("%.1f", run.seconds_to_target).c_str() : "—",
                       reached ? format("%.2f", run.seconds_to_target / reference_seconds).c_str() : "—",
                       run.train_ms_per_step);
    }
    return text;
}

// An optimizer study: each variant's validation loss and training seconds at every evaluation,
// means over the seeds.
// Where each run's block outputs and gradient underflow depart most from the fp32 run of its seed
// (the telemetry the study measures at each evaluation); "" when no run has a departure.
std::string departures_markdown(const StudyReport& report) {
    std::string rows;
    for (const StudyRunSummary& run : report.runs) {
        const TelemetryDeparture &amax = run.departures.amax, &underflow = run.departures.underflow,
                                 &headroom = run.departures.fp8_headroom;
        if (amax.layer < 0 && underflow.layer < 0) continue;
        const auto where = [](const TelemetryDeparture& d) {
            return format("layer %d, step %lld", d.layer, static_cast<long long>(d.step));
        };
        rows += format("| %s | %s | %s | %s | %s | %s | %s |\n", run_label(report, run).c_str(),
                       amax.layer < 0 ? "—" : format("%.3f×", amax.value).c_str(),
                       amax.layer < 0 ? "—" : where(amax).c_str(),
                       underflow.layer < 0 ? "—" : format("%+.4f%%", 100 * underflow.value).c_str(),
                       underflow.layer < 0 ? "—" : where(underflow).c_str(),
                       headroom.layer < 0 ? "—" : format("%+.2f bits", headroom.value).c_str(),
                       headroom.layer < 0 ? "—" : where(headroom).c_str());
    }
    if (rows.empty()) return "";
    return "\n## Where each run departs from fp32 (telemetry)\n\n"
           "At each evaluation the runs measure every block (train --telemetry-interval): its output's max |x|, "
           "and the fraction of its gradient elements below the working dtype's smallest normal (fp16: of the "
           "loss-scaled values). Per run, the layer and step where each departs most from the fp32 run of its "
           "seed: the output maximum's ratio to fp32's, and the underflow's excess over fp32's; in fp8 runs the "
           "least headroom of an FP8 tensor, log2(fp8 max / (amax · scale)) (below 0: that step's quantization "
           "saturated).\n\n"
           "| run | block output max vs fp32 | where | gradient underflow vs fp32 | where | least FP8 headroom "
           "| where |\n"
           "|---|---|---|---|---|---|---|\n" +
           rows;
}

std::string curve_markdown(const StudyReport& report) {
    std::string text =
        report.seeds.size() > 1
            ? "\n## Validation loss against steps and training seconds (means over the seeds)\n\n"
            : "\n## Validation loss against steps and training seconds\n\n";
    std::string header = "| step |", rule = "|---|";
    for (const StudySeedSpread& spread : report.spreads) {
        header += " " + spread.variant.name + ": val loss | seconds |";
        rule += "---|---|";
    }
    text += header + "\n" + rule + "\n";
    const StudyRunSummary& reference = report.runs.front();
    for (size_t e = 0; e < reference.evaluations.size(); ++e) {
        text += format("| %lld |", static_cast<long long>(reference.evaluations[e].step));
        for (const StudySeedSpread& spread : report.spreads) {
            double loss = 0, seconds = 0;
            int count = 0;
            for (const StudyRunSummary& run : report.runs)
                if (run.variant.name == spread.variant.name && e < run.evaluations.size()) {
                    loss += run.evaluations[e].val_loss;
                    seconds += run.evaluations[e].train_seconds;
                    ++count;
                }
            text +=
                count > 0 ? format(" %.4f | %.1f |", loss / count, seconds / count) : std::string(" — | — |");
        }
        text += "\n";
    }
    return text;
}

}  // namespace

StudyRunSummary summarize_study_run(const std::string& study_directory, const std::string& run_directory,
                                    const StudyVariant& variant, uint64_t seed, double bytes_per_token) {
    StudyRunSummary run;
    run.variant = variant;
    run.seed = seed;
    run.directory = run_directory;
    const std::filesystem::path directory = std::filesystem::path(study_directory) / run_directory;
    const RunMetrics metrics = read_run_metrics((directory / "metrics.jsonl").string());
    run.bench = read_study_bench((directory / "study_run.json").string());

    const Json& last = metrics.train.rbegin()->second;
    run.steps = metrics.train.rbegin()->first;
    run.tokens = last["tokens"].get<int64_t>();
    run.skipped_steps = last["skipped_total"].get<int64_t>();
    run.train_tokens_per_second = median(metrics.tokens_per_second);
    run.train_ms_per_step = median(metrics.ms_per_step);
    double previous_scale = kNaN;
    for (const auto& [step, record] : metrics.train) {
        run.peak_memory_bytes = std::max(run.peak_memory_bytes, record["memory_bytes"].get<size_t>());
        const double scale = number_or_nan(record["loss_scale"]);
        if (scale != previous_scale && !std::isnan(previous_scale))
            run.loss_scale_changes.push_back({step, scale});
        previous_scale = scale;
    }
    run.final_loss_scale = previous_scale;

    MIXGPT_REQUIRE(!metrics.eval.empty(), (directory / "metrics.jsonl").string() + ": holds no evaluation");
    run.best_val_loss = std::numeric_limits<double>::infinity();
    for (const auto& [step, record] : metrics.eval) {
        StudyEvalPoint point;
        point.step = step;
        point.val_loss = number_or_nan(record["val_loss"]);
        point.gap_to_fp32 = kNaN;
        if (record.contains("grad_zero_fraction"))
            point.grad_zero_fraction = record["grad_zero_fraction"].get<double>();
        for (auto train = metrics.train.begin(); train != metrics.train.end() && train->first <= step;
             ++train)
            point.train_seconds += number_or_nan(train->second["ms_per_step"]) / 1e3;
        if (point.val_loss < run.best_val_loss) {
            run.best_val_loss = point.val_loss;
            run.best_step = step;
        }
        run.evaluations.push_back(point);
    }
    run.telemetry = study_telemetry(metrics.telemetry);
    run.final_val_loss = run.evaluations.back().val_loss;
    run.final_perplexity = std::exp(run.final_val_loss);
    run.final_bits_per_byte = bits_per_byte(run.final_val_loss, bytes_per_token);
    run.best_bits_per_byte = bits_per_byte(run.best_val_loss, bytes_per_token);
    return run;
}

void compare_runs(StudyReport& report) {
    for (StudyRunSummary& run : report.runs) {
        const StudyRunSummary* first = first_run(report, run.seed);
        run.steps_to_target = -1;
        run.seconds_to_target = kNaN;
        for (const StudyEvalPoint& point : run.evaluations)
            if (point.val_loss <= first->final_val_loss) {
                run.steps_to_target = point.step;
                run.seconds_to_target = point.train_seconds;
                break;
            }
    }
    for (StudyRunSummary& run : report.runs) {
        const StudyRunSummary* reference = fp32_run(report, run.seed);
        if (reference == nullptr) continue;
        std::map<int64_t, double> reference_loss;
        for (const StudyEvalPoint& point : reference->evaluations)
            reference_loss[point.step] = point.val_loss;
        for (StudyEvalPoint& point : run.evaluations) {
            const auto found = reference_loss.find(point.step);
            point.gap_to_fp32 = found == reference_loss.end() ? kNaN : point.val_loss - found->second;
        }
        if (reference != &run) run.departures = telemetry_departures(run.telemetry, reference->telemetry);
    }
    report.spreads.clear();
    for (const StudyRunSummary& run : report.runs) {
        if (spread_of(report, run.variant.name) != nullptr) continue;
        std::vector<double> losses;
        for (const StudyRunSummary& same : report.runs)
            if (same.variant.name == run.variant.name) losses.push_back(same.final_val_loss);
        report.spreads.push_back(spread_over_seeds(run.variant, losses));
    }
}

std::string study_report_json(const StudyReport& report) {
    Json runs = Json::array();
    for (const StudyRunSummary& run : report.runs) runs.push_back(run_json(run));
    Json spreads = Json::array();
    for (const StudySeedSpread& spread : report.spreads) spreads.push_back(spread_json(spread));
    const Json json = {{"dataset", report.dataset},
                       {"model",
                        {{"preset", report.model},
                         {"arch", report.arch},
                         {"n_layer", report.n_layer},
                         {"n_head", report.n_head},
                         {"n_embd", report.n_embd}}},
                       {"batch_size", report.batch_size},
                       {"seq_len", report.seq_len},
                       {"steps", report.steps},
                       {"tokens_per_run", report.tokens_per_run},
                       {"seed", report.seeds.empty() ? 0 : report.seeds.front()},
                       {"seeds", report.seeds},
                       {"data_seed", report.data_seed},
                       {"val_bytes_per_token", report.bytes_per_token},
                       {"compares", report.optimizers ? "optimizers" : "precisions"},
                       {"runs", runs},
                       {"spreads", spreads}};
    return json.dump(2) + "\n";
}

std::string study_report_markdown(const StudyReport& report) {
    const bool several_seeds = report.seeds.size() > 1;
    bool any_emulated = false;
    for (const StudyRunSummary& run : report.runs) any_emulated = any_emulated || run.bench.emulated;
    const std::string seeds =
        several_seeds
            ? format("initialized from seeds %s, every one with the data order of seed %llu",
                     seed_list(report.seeds).c_str(), static_cast<unsigned long long>(report.data_seed))
            : "every run the same seed (" + seed_list(report.seeds) + ") and data order";
    std::string text = format("# %s study: %s %s (%d layers, %d heads, width %d)\n\n",
                              report.optimizers ? "Optimizer" : "Precision", report.model.c_str(),
                              report.arch.c_str(), report.n_layer, report.n_head, report.n_embd);
    text += format(
        "Dataset `%s`; %s; every run the same budget: %lld steps, %lld tokens, B=%d, T=%d. Device: %s.\n",
        report.dataset.c_str(), seeds.c_str(), static_cast<long long>(report.steps),
        static_cast<long long>(report.tokens_per_run), report.batch_size, report.seq_len,
        report.runs.empty() ? "none" : report.runs.front().bench.device.c_str());
    if (any_emulated)
        text +=
            "\nOn the CPU, tf32, bf16, fp16 and fp8 are emulated (fp32 arithmetic on rounded storage): their "
            "accuracy is what the precision gives, their speed says nothing about hardware with native "
            "support. Every speed figure of an emulated run says so.\n";
    if (several_seeds) text += spread_markdown(report);
    if (report.optimizers) text += target_markdown(report) + curve_markdown(report);

    text += several_seeds ? "\n## Accuracy and speed of each run\n\n" : "\n## Accuracy and speed\n\n";
    // An optimizer study measures every run by its seed's run of the first optimizer.
    const std::string reference_name = report.optimizers ? report.runs.front().variant.name : "fp32";
    text +=
        "| run | final val loss | vs " + reference_name +
        " | best val loss (step) | perplexity | bits/byte | tokens/s (training) | ms/step | tokens/s (bench) "
        "| peak memory |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for (const StudyRunSummary& run : report.runs)
        text += format(
            "| %s | %.4f | %s | %.4f (%lld) | %.2f | %.4f | %s | %s | %s | %s |\n",
            run_label(report, run).c_str(), run.final_val_loss,
            relative_gap(run, report.optimizers ? first_run(report, run.seed) : fp32_run(report, run.seed))
                .c_str(),
            run.best_val_loss, static_cast<long long>(run.best_step), run.final_perplexity,
            run.final_bits_per_byte, speed(run.train_tokens_per_second, "%.0f", run.bench.emulated).c_str(),
            speed(run.train_ms_per_step, "%.1f", run.bench.emulated).c_str(),
            speed(run.bench.tokens_per_second, "%.0f", run.bench.emulated).c_str(),
            mib(run.peak_memory_bytes).c_str());
    if (report.optimizers)
        text +=
            "\nThe bench column is `mixgpt bench` of the precision, which trains with AdamW: the training "
            "columns are each optimizer's own.\n";
    text += "\nRuns: ";
    for (size_t i = 0; i < report.spreads.size(); ++i)
        text += (i ? "; " : "") + format("`%s`: %s", report.spreads[i].variant.name.c_str(),
                                         report.spreads[i].variant.description.c_str());
    text += ".\n";

    text += "\n## Loss scaling and gradient underflow\n\n";
    text +=
        "Gradient elements exactly zero: of the last step's gradients at the last evaluation (the fp32 run "
        "gives the elements that are zero for other reasons).\n\n"
        "| run | loss scaling | skipped steps | scale changes | final scale | gradient elements exactly zero "
        "|\n"
        "|---|---|---|---|---|---|\n";
    for (const StudyRunSummary& run : report.runs) {
        const double zero_fraction = run.evaluations.back().grad_zero_fraction;
        text += format("| %s | %s | %lld | %zu | %g | %s |\n", run_label(report, run).c_str(),
                       run.variant.loss_scale.c_str(), static_cast<long long>(run.skipped_steps),
                       run.loss_scale_changes.size(), run.final_loss_scale,
                       zero_fraction < 0 ? "—" : format("%.4f%%", 100.0 * zero_fraction).c_str());
    }

    const StudyRunSummary* reference =
        report.seeds.empty() ? nullptr : fp32_run(report, report.seeds.front());
    if (reference != nullptr) text += gap_markdown(report, *reference);
    text += departures_markdown(report);
    text +=
        "\n## Figures\n\n![final validation loss per seed](final_loss.png)\n![loss curves](loss_curves.png)\n"
        "![gap to fp32](val_gap.png)\n![tokens per second](throughput.png)\n![memory](memory.png)\n";
    return text;
}

std::string study_bench_json(const StudyBench& bench, int64_t steps) {
    const Json json = {{"steps", steps},
                       {"bench",
                        {{"tokens_per_second", bench.tokens_per_second},
                         {"ms_per_step", bench.ms_per_step},
                         {"peak_memory_bytes", bench.peak_memory_bytes},
                         {"device", bench.device},
                         {"emulated", bench.emulated}}}};
    return json.dump(2) + "\n";
}

StudyBench read_study_bench(const std::string& path) {
    std::ifstream file(path);
    MIXGPT_REQUIRE(file.good(), path + ": missing (the run is not complete)");
    try {
        const Json json = Json::parse(file);
        const Json& bench = json.at("bench");
        StudyBench result;
        result.tokens_per_second = bench.at("tokens_per_second").get<double>();
        result.ms_per_step = bench.at("ms_per_step").get<double>();
        result.peak_memory_bytes = bench.at("peak_memory_bytes").get<size_t>();
        result.device = bench.at("device").get<std::string>();
        result.emulated = bench.at("emulated").get<bool>();
        return result;
    } catch (const Json::exception& error) {
        throw Error(path + ": not a study run record (" + error.what() + ")");
    }
}

}  // namespace mixgpt
