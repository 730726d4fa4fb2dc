// --threads, shared by every subcommand that has one (prepare, train, eval, sample, bench, study,
// export): a count from 0 (the default: one per processor) to core/thread_limit.h's bound, checked
// on the command line and in a --config file alike, so that a huge count is one line, not a crash.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace mixgpt::cli {

CLI::Option* add_threads_option(CLI::App& command, int& threads, const std::string& description);

}  // namespace mixgpt::cli
