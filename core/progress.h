// A progress display for long work: done/total, rate, ETA and custom fields.
//
// On a terminal it redraws one line on stderr at most every 0.1 s; otherwise
// (CI logs, pipes) it prints a plain line every `plain_interval_seconds`.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace mixgpt {

class Progress {
public:
    // `unit` names what is counted ("MB", "tok", "step"); total 0 means unknown.
    Progress(std::string label, double total, std::string unit, double plain_interval_seconds = 10.0);
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    // Sets the amount done so far and the extra fields shown ("loss 3.21 | lr 6e-4").
    void update(double done, const std::string& fields = "");
    // Prints the final line (always, terminal or not).
    void finish(const std::string& fields = "");

    double rate() const;  // units per second since construction

private:
    std::string render(const std::string& fields) const;
    void emit(const std::string& line, bool final_line);

    std::string label_;
    double total_;
    std::string unit_;
    double plain_interval_seconds_;
    bool is_terminal_;
    bool finished_ = false;
    double done_ = 0.0;
    std::chrono::steady_clock::time_point start_;
    std::chrono::steady_clock::time_point last_emit_;
};

// "1h02m", "3m07s", "12s".
std::string format_duration(double seconds);

}  // namespace mixgpt
