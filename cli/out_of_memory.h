// What `mixgpt` advises when a command ran out of memory (std::bad_alloc reaching main): the
// batch shape for the commands that have one, else what limits the memory; never an option the
// command lacks (export has no --batch-size).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace mixgpt::cli {

// `app` after parsing: the advice for the subcommand it ran.
std::string out_of_memory_advice(const CLI::App& app);

}  // namespace mixgpt::cli
