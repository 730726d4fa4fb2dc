#include "train/metrics.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "train/event_file.h"
#include "train/tensorboard_metrics.h"

namespace mixgpt {

int64_t truncate_metrics_after(const std::string& path, int64_t step) {
    std::ifstream input(path);
    if (!input) return 0;
    std::vector<std::string> kept;
    int64_t dropped = 0;
    for (std::string line; std::getline(input, line);) {
        const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
        const bool complete = !input.eof() && record.is_object() && record.contains("step") &&
                              record["step"].is_number_integer();
        if (complete && record["step"].get<int64_t>() <= step)
            kept.push_back(line);
        else
            ++dropped;
    }
    if (dropped == 0) return 0;
    AtomicOutput output(path);
    {
        std::ofstream file(output.temporary_path(), std::ios::trunc);
        for (const std::string& line : kept) file << line << '\n';
        file.close();
        MIXGPT_REQUIRE(file.good(), output.temporary_path() + ": cannot write the metrics file");
    }
    output.commit();
    return dropped;
}

void require_metrics_writable(const TrainOptions& options) {
    if (!options.tensorboard_dir.empty()) require_event_folder_writable(options.tensorboard_dir);
}

MetricsWriter::MetricsWriter(const std::string& path, bool append, const TrainOptions& options)
    : path_(path) {
    if (!options.tensorboard_dir.empty()) {
        const LossScalePolicy loss_scale =
            parse_loss_scale(options.loss_scale, options.precision, options.loss_scale_growth_interval);
        tensorboard_ = std::make_unique<TensorBoardMetrics>(options.tensorboard_dir,
                                                            loss_scale.mode != LossScaleMode::none);
    }
    file_ = std::fopen(path.c_str(), append ? "a" : "w");
    MIXGPT_REQUIRE(file_ != nullptr, path + ": cannot open the metrics file for writing");
    if (tensorboard_ && !append) tensorboard_->write_start(0);
}

MetricsWriter::~MetricsWriter() { std::fclose(file_); }

void MetricsWriter::write_line(const std::string& line) {
    const bool written =
        std::fputs(line.c_str(), file_) >= 0 && std::fputc('\n', file_) != EOF && std::fflush(file_) == 0;
    MIXGPT_REQUIRE(written, path_ + ": cannot write to the metrics file");
}

void MetricsWriter::write(const TrainMetrics& metrics) {
    nlohmann::ordered_json line = {{"type", "train"},
                                   {"step", metrics.step},
                                   {"loss", metrics.loss},
                                   {"lr", metrics.learning_rate},
                                   {"grad_norm", metrics.grad_norm},
                                   {"loss_scale", metrics.loss_scale},
                                   {"skipped", metrics.skipped},
                                   {"skipped_total", metrics.skipped_total},
                                   {"tokens", metrics.tokens},
                                   {"tokens_per_second", metrics.tokens_per_second},
                                   {"ms_per_step", metrics.ms_per_step},
                                   {"memory_bytes", metrics.memory_bytes}};
    if (metrics.z_loss >= 0) line["z_loss"] = metrics.z_loss;
    if (std::isfinite(metrics.mfu)) line["mfu"] = metrics.mfu;
    if (metrics.spike_skips) {
        line["spike_skipped"] = metrics.spike_skips->held;
        line["spike_skips"] = metrics.spike_skips->total;
    }
    if (metrics.fp8) {
        line["fp8_saturated"] = {{"inputs", metrics.fp8_saturated.inputs},
                                 {"weights", metrics.fp8_saturated.weights},
                                 {"gradients", metrics.fp8_saturated.gradients}};
    }
    write_line(line.dump());
    if (tensorboard_) tensorboard_->write(metrics);
}

void MetricsWriter::write(const EvalMetrics& metrics) {
    nlohmann::ordered_json line = {{"type", "eval"},
                                   {"step", metrics.step},
                                   {"val_loss", metrics.val_loss},
                                   {"val_perplexity", metrics.val_perplexity},
                                   {"val_tokens", metrics.val_tokens}};
    if (metrics.grad_zero_fraction >= 0) line["grad_zero_fraction"] = metrics.grad_zero_fraction;
    write_line(line.dump());
    if (tensorboard_) tensorboard_->write(metrics);
}

void MetricsWriter::write(const TaskEvalMetrics& metrics) {
    const nlohmann::ordered_json line = {{"type", "task_eval"},          {"step", metrics.step},
                                   {"task", metrics.task},         {"data", metrics.data},
                                   {"examples", metrics.examples}, {"acc", metrics.acc},
                                   {"acc_norm", metrics.acc_norm}, {"chance", metrics.chance}};
    write_line(line.dump());
    if (tensorboard_) tensorboard_->write(metrics);
}

void MetricsWriter::write(const TelemetryRecord& record) {
    write_line(telemetry_json(record));
    if (tensorboard_) tensorboard_->write(record);
}

void MetricsWriter::write_resume(int64_t step) {
    const nlohmann::ordered_json line = {{"type", "resume"}, {"step", step}};
    write_line(line.dump());
    if (tensorboard_) tensorboard_->write_start(step);
}

}  // namespace mixgpt
