// Placeholder until the eval subcommand lands; replaced by its real definition.
#include "cli/commands.h"
#include "cli/toml_config.h"
#include "core/error.h"

namespace mixgpt::cli {

void add_eval_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("eval", "eval (not yet implemented)");
    add_config_option(*command);
    command->callback([] { throw Error("'eval' is not implemented yet"); });
}

}  // namespace mixgpt::cli
