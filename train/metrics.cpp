#include "train/metrics.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace mixgpt {

MetricsWriter::MetricsWriter(const std::string& path, bool append) : path_(path) {
    file_ = std::fopen(path.c_str(), append ? "a" : "w");
    MIXGPT_REQUIRE(file_ != nullptr, path + ": cannot open the metrics file for writing");
}

MetricsWriter::~MetricsWriter() { std::fclose(file_); }

void MetricsWriter::write_line(const std::string& line) {
    const bool written =
        std::fputs(line.c_str(), file_) >= 0 && std::fputc('\n', file_) != EOF && std::fflush(file_) == 0;
    MIXGPT_REQUIRE(written, path_ + ": cannot write to the metrics file");
}

void MetricsWriter::write(const TrainMetrics& metrics) {
    const nlohmann::ordered_json line = {{"type", "train"},
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
    write_line(line.dump());
}

void MetricsWriter::write(const EvalMetrics& metrics) {
    nlohmann::ordered_json line = {{"type", "eval"},
                                   {"step", metrics.step},
                                   {"val_loss", metrics.val_loss},
                                   {"val_perplexity", metrics.val_perplexity},
                                   {"val_tokens", metrics.val_tokens}};
    if (metrics.grad_zero_fraction >= 0) line["grad_zero_fraction"] = metrics.grad_zero_fraction;
    write_line(line.dump());
}

void MetricsWriter::write_resume(int64_t step) {
    const nlohmann::ordered_json line = {{"type", "resume"}, {"step", step}};
    write_line(line.dump());
}

}  // namespace mixgpt
