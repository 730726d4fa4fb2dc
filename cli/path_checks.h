// Checks for options that name a file the command writes (eval --per-example, bench --json-out):
// an empty value names nothing, and was taken as "no such output" without a word.
#pragma once

#include <CLI/CLI.hpp>

namespace mixgpt::cli {

CLI::Validator names_a_file();  // "must name a file (got '')"

}  // namespace mixgpt::cli
