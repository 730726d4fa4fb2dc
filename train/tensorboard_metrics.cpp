#include "train/tensorboard_metrics.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include "train/event_records.h"

namespace mixgpt {

TensorBoardMetrics::TensorBoardMetrics(const std::string& directory, bool loss_scaled)
    : file_(directory), loss_scaled_(loss_scaled) {}

void TensorBoardMetrics::write_start(int64_t step) {
    file_.write(session_start_event(event_wall_time(), step + 1));
}

void TensorBoardMetrics::write(const TrainMetrics& metrics) {
    std::vector<TensorBoardScalar> scalars = {
        {"train/loss", static_cast<float>(metrics.loss)},
        {"train/lr", static_cast<float>(metrics.learning_rate)},
        {"train/grad_norm", static_cast<float>(metrics.grad_norm)},
        {"train/skipped_total", static_cast<float>(metrics.skipped_total)},
        {"train/tokens", static_cast<float>(metrics.tokens)},
        {"train/tokens_per_second", static_cast<float>(metrics.tokens_per_second)},
        {"train/ms_per_step", static_cast<float>(metrics.ms_per_step)},
        {"train/memory_bytes", static_cast<float>(metrics.memory_bytes)}};
    if (loss_scaled_) scalars.push_back({"train/loss_scale", static_cast<float>(metrics.loss_scale)});
    if (std::isfinite(metrics.mfu)) scalars.push_back({"train/mfu", static_cast<float>(metrics.mfu)});
    if (metrics.spike_skips)
        scalars.push_back({"train/spike_skips", static_cast<float>(metrics.spike_skips->total)});
    if (metrics.fp8) {
        scalars.push_back({"train/fp8_saturated/inputs", static_cast<float>(metrics.fp8_saturated.inputs)});
        scalars.push_back({"train/fp8_saturated/weights", static_cast<float>(metrics.fp8_saturated.weights)});
        scalars.push_back(
            {"train/fp8_saturated/gradients", static_cast<float>(metrics.fp8_saturated.gradients)});
    }
    file_.write(scalars_event(event_wall_time(), metrics.step, scalars));
}

void TensorBoardMetrics::write(const EvalMetrics& metrics) {
    std::vector<TensorBoardScalar> scalars = {{"val/loss", static_cast<float>(metrics.val_loss)},
                                              {"val/perplexity", static_cast<float>(metrics.val_perplexity)},
                                              {"val/tokens", static_cast<float>(metrics.val_tokens)}};
    if (metrics.grad_zero_fraction >= 0)
        scalars.push_back({"val/grad_zero_fraction", static_cast<float>(metrics.grad_zero_fraction)});
    file_.write(scalars_event(event_wall_time(), metrics.step, scalars));
    file_.flush();
}

void TensorBoardMetrics::write(const TelemetryRecord& record) {
    std::vector<TensorBoardScalar> scalars;
    for (const auto& [tag, value] : telemetry_scalars(record)) scalars.push_back({tag, static_cast<float>(value)});
    file_.write(scalars_event(event_wall_time(), record.step, scalars, telemetry_histograms(record)));
}

void TensorBoardMetrics::write(const TaskEvalMetrics& metrics) {
    const std::string task = "task/" + std::filesystem::path(metrics.data).filename().string();
    file_.write(scalars_event(event_wall_time(), metrics.step,
                              {{task + "/acc", static_cast<float>(metrics.acc)},
                               {task + "/acc_norm", static_cast<float>(metrics.acc_norm)}}));
    file_.flush();
}

}  // namespace mixgpt
