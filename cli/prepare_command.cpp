// Placeholder until the prepare subcommand lands; replaced by its real definition.
#include "cli/commands.h"
#include "cli/toml_config.h"
#include "core/error.h"

namespace mixgpt::cli {

void add_prepare_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("prepare", "prepare (not yet implemented)");
    add_config_option(*command);
    command->callback([] { throw Error("'prepare' is not implemented yet"); });
}

}  // namespace mixgpt::cli
