// Reads `--config FILE.toml` for CLI11 with toml++ (a real TOML parser), so a
// subcommand's options can come from a file and the command line wins.
//
// Keys are option long names; '_' and '-' are interchangeable
// (`batch_size = 16` sets --batch-size). Tables are flattened into their keys
// ([optimizer] lr = 3e-4 sets --lr), so a config may be grouped for reading.
#pragma once

#include <CLI/CLI.hpp>
#include <istream>
#include <string>
#include <vector>

namespace mixgpt::cli {

class TomlConfig : public CLI::Config {
public:
    // `source` names the input in syntax errors: "<source>:<line>:<column>: <what is wrong>".
    explicit TomlConfig(std::string source = "config") : source_(std::move(source)) {}
    std::string to_config(const CLI::App* app, bool default_also, bool write_description,
                          std::string prefix) const override;
    std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;

private:
    std::string source_;
};

// Adds `--config FILE` to `command`, read with TomlConfig; unknown keys, a file that cannot be
// read, and anything but a regular file of at most 1 MiB (a directory, /dev/zero, a pipe) are errors.
void add_config_option(CLI::App& command);

}  // namespace mixgpt::cli
