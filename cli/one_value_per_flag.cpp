#include "cli/commands.h"

namespace mixgpt::cli {

void take_one_value_per_flag(CLI::App& app) {
    for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
        for (CLI::Option* option : command->get_options([](CLI::Option*) { return true; })) {
            if (!option->get_positional() && option->get_items_expected_max() > 1) option->allow_extra_args(false);
        }
        take_one_value_per_flag(*command);
    }
}

}  // namespace mixgpt::cli
