// Placeholder until the train subcommand lands; replaced by its real definition.
#include "cli/commands.h"
#include "cli/toml_config.h"
#include "core/error.h"

namespace mixgpt::cli {

void add_train_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("train", "train (not yet implemented)");
    add_config_option(*command);
    command->callback([] { throw Error("'train' is not implemented yet"); });
}

}  // namespace mixgpt::cli
