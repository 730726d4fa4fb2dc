#include "cli/out_of_memory.h"

namespace mixgpt::cli {

std::string out_of_memory_advice(const CLI::App& app) {
    for (const CLI::App* command : app.get_subcommands())
        if (command->get_option_no_throw("--batch-size") != nullptr &&
            command->get_option_no_throw("--seq-len") != nullptr)
            return "use a smaller --batch-size/-b or --seq-len/-t";
    return "free memory, or raise the limit on it (ulimit -v, the cgroup's memory.max)";
}

}  // namespace mixgpt::cli
