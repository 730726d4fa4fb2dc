// `--config FILE.toml` through CLI11 + toml++: file values apply, the command line wins,
// unknown keys, empty keys and malformed files are errors.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/toml_config.h"
#include "tests/test_support.h"

namespace mixgpt::cli {
namespace {

struct Parsed {
    int batch_size = 1;
    double lr = 0.0;
    std::string precision = "fp32";
    bool compile = false;
};

// Parses `train <arguments>` with the options on a subcommand, as in mixgpt.
Parsed parse(std::vector<std::string> arguments) {
    Parsed parsed;
    CLI::App app{"test"};
    CLI::App* train = app.add_subcommand("train");
    add_config_option(*train);
    train->add_option("--batch-size", parsed.batch_size);
    train->add_option("--lr", parsed.lr);
    train->add_option("--precision", parsed.precision);
    train->add_flag("--compile", parsed.compile);
    arguments.insert(arguments.begin(), "train");
    std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());
    app.parse(reversed);
    return parsed;
}

TEST(TomlConfig, FileSetsOptionsAndCommandLineWins) {
    const test::TempDirectory directory("mixgpt_config");
    const std::string path = directory.write(
        "run.toml", "batch_size = 8\nprecision = \"bf16\"\ncompile = true\n[optimizer]\nlr = 3e-4\n");
    Parsed from_file = parse({"--config", path});
    EXPECT_EQ(from_file.batch_size, 8);
    EXPECT_EQ(from_file.precision, "bf16");
    EXPECT_TRUE(from_file.compile);
    EXPECT_DOUBLE_EQ(from_file.lr, 3e-4);
    Parsed overridden = parse({"--config", path, "--batch-size", "2"});
    EXPECT_EQ(overridden.batch_size, 2);
}

TEST(TomlConfig, UnknownKeysAndMalformedFilesAreErrors) {
    const test::TempDirectory directory("mixgpt_config");
    const std::string unknown = directory.write("unknown.toml", "batch_sise = 8\n");
    EXPECT_THROW(parse({"--config", unknown}), CLI::ParseError);
    const std::string malformed = directory.write("malformed.toml", "batch_size = = 8\n");
    EXPECT_THROW(parse({"--config", malformed}), CLI::ParseError);
    EXPECT_THROW(parse({"--config", "/nonexistent/run.toml"}), CLI::ParseError);
}

// TOML allows an empty quoted key; it names no option (found by fuzz/toml_config).
TEST(TomlConfig, EmptyKeysAreErrors) {
    std::istringstream input("batch_size = 8\n'' = '''x'''\n");
    try {
        TomlConfig("run.toml").from_config(input);
        FAIL() << "no error";
    } catch (const CLI::ParseError& error) {
        EXPECT_STREQ(error.what(), "run.toml: an empty key names no option");
    }
}

}  // namespace
}  // namespace mixgpt::cli
