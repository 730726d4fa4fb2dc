#include "eval/run_multiple_choice.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "core/output_file.h"
#include "core/progress.h"
#include "eval/checkpoint_tokenizer.h"
#include "kernels/precision.h"
#include "model/run_layout.h"

namespace mixgpt {
namespace {

// The longest row's input count: the sequence length the model needs.
int longest_row_inputs(const ChoiceTask& task) {
    int longest = 1;
    for (const EncodedExample& example : task.examples)
        for (const std::vector<int32_t>& choice : example.choices)
            longest = std::max(longest, static_cast<int>(std::min(example.context.size() + choice.size(),
                                                                  static_cast<size_t>(task.window) + 1)) -
                                            1);
    return longest;
}

std::string percent(double fraction) { return format("%.2f%%", 100 * fraction); }

}  // namespace

nlohmann::ordered_json task_result_json(const TaskResult& result) {
    const TaskTotals& totals = result.totals;
    const Interval acc = wilson_interval(totals.correct, totals.examples);
    const Interval acc_norm = wilson_interval(totals.correct_norm, totals.examples);
    return {{"task", result.task},
            {"data", result.data},
            {"examples", totals.examples},
            {"acc", totals.acc()},
            {"acc_interval", {acc.low, acc.high}},
            {"acc_norm", totals.acc_norm()},
            {"acc_norm_interval", {acc_norm.low, acc_norm.high}},
            {"correct", totals.correct},
            {"correct_norm", totals.correct_norm},
            {"chance", totals.chance()},
            {"contexts_cut", totals.contexts_cut},
            {"window", result.window},
            {"skipped_lines", result.skipped_lines}};
}

TaskEvalReport run_task_evaluation(const TaskEvalOptions& options) {
    MIXGPT_REQUIRE(!options.data.empty(), "data: required with --task (a JSON Lines file)");
    MIXGPT_REQUIRE(options.batch_size >= 1, "batch-size: must be at least 1");
    TaskLoadOptions load;
    try {
        load.format = parse_task_format(options.task);
    } catch (const Error& error) {
        throw Error(std::string("task: ") + error.what());
    }
    load.limit = options.limit;
    load.skip_bad_lines = options.skip_bad_lines;
    CheckpointModel loaded = CheckpointModel::read(options.checkpoint);
    load.window = loaded.checkpoint.config.max_seq_len;
    const Tokenizer tokenizer = load_checkpoint_tokenizer(loaded, options.tokenizer);
    const ChoiceTask task = load_choice_task(options.data, load, tokenizer);
    if (task.skipped_lines > 0)
        log_warning(format("%s: skipped %lld bad lines", options.data.c_str(),
                           static_cast<long long>(task.skipped_lines)));

    loaded.instantiate(options.device, options.batch_size, longest_row_inputs(task));
    TaskEvalReport report;
    report.checkpoint = loaded.path;
    report.step = loaded.checkpoint.step;
    report.batch_size = options.batch_size;
    report.device = loaded.backend->name();
    report.precision =
        precision_name(options.device.precision.empty() ? loaded.checkpoint.precision
                                                        : parse_precision(options.device.precision));
    report.result.task = task_format_name(task.format);
    report.result.data = options.data;
    report.result.window = task.window;
    report.result.skipped_lines = task.skipped_lines;

    // Opened before the work, so that a path that cannot be written fails at once.
    std::optional<OutputFile> per_example;
    if (!options.per_example.empty()) {
        require_not_a_run_file(options.per_example, run_directory_of(options.checkpoint, loaded.path),
                               "--per-example");
        per_example.emplace(options.per_example,
                            std::vector<std::string>{options.data, loaded.path, tokenizer.path()},
                            "--per-example");
    }

    const auto start = std::chrono::steady_clock::now();
    Progress progress(report.result.task, static_cast<double>(task.examples.size()), "ex");
    const std::vector<ExampleScore> scores = score_choice_task(
        *loaded.model, task, 0, 1, [&](int64_t done) { progress.update(static_cast<double>(done)); });
    report.result.totals = count_task_results(task, scores);
    progress.finish(format("acc %s, acc_norm %s", percent(report.result.totals.acc()).c_str(),
                           percent(report.result.totals.acc_norm()).c_str()));
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (per_example) {
        std::ostringstream lines;
        write_per_example_scores(lines, task, scores);
        per_example->write(lines.str());
    }
    return report;
}

std::string task_report_json(const TaskEvalReport& report) {
    nlohmann::ordered_json json = {{"checkpoint", report.checkpoint}, {"step", report.step}};
    json.update(task_result_json(report.result));
    json["batch_size"] = report.batch_size;
    json["device"] = report.device;
    json["precision"] = report.precision;
    json["seconds"] = report.seconds;
    json["examples_per_second"] = static_cast<double>(report.result.totals.examples) / report.seconds;
    return json.dump(2);
}

std::string task_report_text(const TaskEvalReport& report) {
    const TaskTotals& totals = report.result.totals;
    const Interval acc = wilson_interval(totals.correct, totals.examples);
    const Interval acc_norm = wilson_interval(totals.correct_norm, totals.examples);
    return format(
        "checkpoint     %s (step %lld)\ntask           %s, %s\nexamples       %lld (chance %s; %lld bad "
        "lines "
        "skipped)\nacc            %s (95%% interval %s to %s; lowest summed loss)\n"
        "acc_norm       %s (95%% interval %s to %s; lowest loss per choice token)\n"
        "contexts cut   %lld (window %d tokens)\nspeed          %.1f examples/s (%.1f s; %d rows per batch, "
        "%s, %s)\n",
        report.checkpoint.c_str(), static_cast<long long>(report.step), report.result.task.c_str(),
        report.result.data.c_str(), static_cast<long long>(totals.examples), percent(totals.chance()).c_str(),
        static_cast<long long>(report.result.skipped_lines), percent(totals.acc()).c_str(),
        percent(acc.low).c_str(), percent(acc.high).c_str(), percent(totals.acc_norm()).c_str(),
        percent(acc_norm.low).c_str(), percent(acc_norm.high).c_str(),
        static_cast<long long>(totals.contexts_cut), report.result.window,
        static_cast<double>(totals.examples) / report.seconds, report.seconds, report.batch_size,
        report.device.c_str(), report.precision.c_str());
}

void write_per_example_scores(std::ostream& out, const ChoiceTask& task,
                              const std::vector<ExampleScore>& scores) {
    for (size_t e = 0; e < task.examples.size(); ++e) {
        const EncodedExample& example = task.examples[e];
        const ExampleScore& score = scores[e];
        const nlohmann::ordered_json line = {{"id", example.id},
                                             {"line", example.line},
                                             {"label", example.label},
                                             {"choice", score.choice},
                                             {"choice_norm", score.choice_norm},
                                             {"sums", score.sums},
                                             {"tokens", score.tokens},
                                             {"context_tokens", example.context.size()},
                                             {"context_cut", example.context_cut}};
        out << line.dump() << '\n';
    }
}

}  // namespace mixgpt
