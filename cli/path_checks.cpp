#include "cli/path_checks.h"

namespace mixgpt::cli {

CLI::Validator names_a_file() {
    return CLI::Validator(
        [](std::string& input) -> std::string { return input.empty() ? "must name a file (got '')" : ""; },
        "FILE");
}

}  // namespace mixgpt::cli
