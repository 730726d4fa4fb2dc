// Logging to stderr with a level and a wall-clock stamp. Data and results go to
// stdout; everything a person reads while a job runs goes through here.
#pragma once

#include <string>

namespace mixgpt {

enum class LogLevel { debug = 0, info = 1, warning = 2, error = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_message(LogLevel level, const std::string& message);

inline void log_info(const std::string& message) { log_message(LogLevel::info, message); }
inline void log_warning(const std::string& message) { log_message(LogLevel::warning, message); }
inline void log_debug(const std::string& message) { log_message(LogLevel::debug, message); }

// printf-style formatting into a std::string.
std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));

}  // namespace mixgpt
