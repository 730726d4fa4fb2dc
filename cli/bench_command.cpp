// Placeholder until the bench subcommand lands; replaced by its real definition.
#include "cli/commands.h"
#include "cli/toml_config.h"
#include "core/error.h"

namespace mixgpt::cli {

void add_bench_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("bench", "bench (not yet implemented)");
    add_config_option(*command);
    command->callback([] { throw Error("'bench' is not implemented yet"); });
}

}  // namespace mixgpt::cli
