#include "train/task_eval.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "core/output_file.h"

namespace mixgpt {

TaskEvalSpec parse_task_eval_spec(const std::string& text) {
    const size_t colon = text.find(':');
    MIXGPT_REQUIRE(colon != std::string::npos && colon + 1 < text.size(),
                   "task-eval: \"" + text + "\" is not FORMAT:FILE (e.g. hellaswag:hellaswag_val.jsonl)");
    TaskEvalSpec spec;
    try {
        spec.format = parse_task_format(text.substr(0, colon));
    } catch (const Error& error) {
        throw Error("task-eval: " + std::string(error.what()));
    }
    spec.path = text.substr(colon + 1);
    return spec;
}

TrainingTaskEvals::TrainingTaskEvals(const std::vector<std::string>& specs, int64_t limit,
                                     const Tokenizer& tokenizer, int window) {
    MIXGPT_REQUIRE(limit >= 0, "task-eval-limit: must not be negative");
    for (const std::string& text : specs) {
        const TaskEvalSpec spec = parse_task_eval_spec(text);
        TaskLoadOptions options;
        options.format = spec.format;
        options.window = window;
        options.limit = limit;
        tasks_.push_back(load_choice_task(spec.path, options, tokenizer));
        const ChoiceTask& task = tasks_.back();
        log_info(format("task-eval %s: %zu examples from %s, %lld with contexts longer than the window of %d",
                        task_format_name(task.format), task.examples.size(), task.path.c_str(),
                        static_cast<long long>(task.contexts_cut), window));
    }
}

std::vector<TaskResult> TrainingTaskEvals::run(GPT& model, Communicator& communicator) const {
    std::vector<TaskResult> results;
    for (const ChoiceTask& task : tasks_) {
        const std::vector<ExampleScore> scores =
            score_choice_task(model, task, communicator.rank(), communicator.world_size());
        std::array<double, TaskTotals::kFields> totals = count_task_results(task, scores).to_array();
        communicator.all_reduce_sum_host(totals.data(), static_cast<int>(totals.size()));
        TaskResult result;
        result.task = task_format_name(task.format);
        result.data = task.path;
        result.window = task.window;
        result.totals = TaskTotals::from_array(totals);
        result.skipped_lines = task.skipped_lines;
        results.push_back(result);
    }
    return results;
}

void write_task_report(const std::string& path, int64_t step, double val_loss,
                       const std::vector<TaskResult>& results) {
    nlohmann::ordered_json report = {{"step", step}};
    if (std::isfinite(val_loss)) report["val_loss"] = val_loss;
    report["tasks"] = nlohmann::ordered_json::array();
    for (const TaskResult& result : results) report["tasks"].push_back(task_result_json(result));
    write_whole_file(path, report.dump(2) + "\n");
    log_info("task evaluation " + path);
}

}  // namespace mixgpt
