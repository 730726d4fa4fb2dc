#include "core/progress.h"

#include <unistd.h>

#include <cstdio>

#include "core/log.h"

namespace mixgpt {

Progress::Progress(std::string label, double total, std::string unit, double plain_interval_seconds)
    : label_(std::move(label)),
      total_(total),
      unit_(std::move(unit)),
      plain_interval_seconds_(plain_interval_seconds),
      is_terminal_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_emit_(start_) {}

Progress::~Progress() {
    if (!finished_ && is_terminal_ && done_ > 0) std::fprintf(stderr, "\n");
}

double Progress::rate() const {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return elapsed > 0 ? done_ / elapsed : 0.0;
}

std::string Progress::render(const std::string& fields) const {
    std::string line = label_ + ": ";
    if (total_ > 0) {
        line += format("%.1f/%.1f %s (%.0f%%)", done_, total_, unit_.c_str(), 100.0 * done_ / total_);
    } else {
        line += format("%.1f %s", done_, unit_.c_str());
    }
    const double per_second = rate();
    line += format(" | %.2f %s/s", per_second, unit_.c_str());
    if (total_ > 0 && per_second > 0 && done_ < total_)
        line += " | ETA " + format_duration((total_ - done_) / per_second);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    line += " | " + format_duration(elapsed);
    if (!fields.empty()) line += " | " + fields;
    return line;
}

void Progress::emit(const std::string& line, bool final_line) {
    if (is_terminal_) {
        std::fprintf(stderr, "\r\033[2K%s%s", line.c_str(), final_line ? "\n" : "");
        std::fflush(stderr);
    } else {
        log_info(line);
    }
}

void Progress::update(double done, const std::string& fields) {
    done_ = done;
    const auto now = std::chrono::steady_clock::now();
    const double since_last = std::chrono::duration<double>(now - last_emit_).count();
    const double interval = is_terminal_ ? 0.1 : plain_interval_seconds_;
    if (since_last < interval) return;
    last_emit_ = now;
    emit(render(fields), false);
}

void Progress::finish(const std::string& fields) {
    if (finished_) return;
    finished_ = true;
    emit(render(fields), true);
}

std::string format_duration(double seconds) {
    if (seconds < 0) seconds = 0;
    const auto total = static_cast<long long>(seconds + 0.5);
    const long long hours = total / 3600, minutes = (total % 3600) / 60, secs = total % 60;
    if (hours > 0) return format("%lldh%02lldm", hours, minutes);
    if (minutes > 0) return format("%lldm%02llds", minutes, secs);
    return format("%llds", secs);
}

}  // namespace mixgpt
