// Each subcommand of `mixgpt` adds itself to the top-level CLI11 app: its
// options fill a plain options struct from the library folder that does the
// work, and its callback runs that work. Errors propagate as exceptions to main.
#pragma once

#include <CLI/CLI.hpp>

namespace mixgpt::cli {

void add_prepare_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_study_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_import_command(CLI::App& app);

// Every option of every subcommand that may be given several times takes one value each time it
// is given (`--include A --include B`), never the words after it: CLI11 lets a vector option
// swallow them, so `prepare --include '*.md' DIR` took DIR as a pattern and left no input.
void take_one_value_per_flag(CLI::App& app);

}  // namespace mixgpt::cli
