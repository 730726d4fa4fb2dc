// --device, shared by the commands that run a model (train, eval, sample, bench).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace mixgpt::cli {

// Adds --device to `command`, writing into `device`, which it sets to the default "auto".
CLI::Option* add_device_option(CLI::App& command, std::string& device);

}  // namespace mixgpt::cli
