// Placeholder until the sample subcommand lands; replaced by its real definition.
#include "cli/commands.h"
#include "cli/toml_config.h"
#include "core/error.h"

namespace mixgpt::cli {

void add_sample_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("sample", "sample (not yet implemented)");
    add_config_option(*command);
    command->callback([] { throw Error("'sample' is not implemented yet"); });
}

}  // namespace mixgpt::cli
