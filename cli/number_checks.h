// Range checks for numeric options that say what they want in words. CLI11's PositiveNumber and
// NonNegativeNumber name their range as "0.000000 to 1797693134862315708145...", 309 digits of
// DBL_MAX; these say "must be > 0". Every numeric range check of the command line is one of these.
#pragma once

#include <CLI/CLI.hpp>

namespace mixgpt::cli {

CLI::Validator greater_than(double bound);  // "must be > BOUND"
CLI::Validator at_least(double bound);      // "must be >= BOUND"

inline CLI::Validator positive() { return greater_than(0); }
inline CLI::Validator non_negative() { return at_least(0); }

}  // namespace mixgpt::cli
