// libFuzzer target: the TOML reader of `--config FILE` (cli/toml_config.cpp). Any bytes either
// give config items or throw CLI::ParseError (syntax) / CLI::ConversionError (a value type we do
// not map); nothing else may escape, and nothing may crash or leak.
#include "cli/toml_config.h"

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::istringstream input(std::string(reinterpret_cast<const char*>(data), size));
    try {
        for (const CLI::ConfigItem& item : mixgpt::cli::TomlConfig().from_config(input)) {
            if (item.name.empty()) __builtin_trap();  // every item names an option
        }
    } catch (const CLI::ParseError&) {
        // a one-line error for the user: the expected outcome of bad input
    }
    return 0;
}
