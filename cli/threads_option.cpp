#include "cli/threads_option.h"

#include "core/thread_limit.h"

namespace mixgpt::cli {

CLI::Option* add_threads_option(CLI::App& command, int& threads, const std::string& description) {
    const CLI::Validator bounded(
        [](std::string& input) -> std::string {
            long long count = 0;
            size_t used = 0;
            try {
                count = std::stoll(input, &used);
            } catch (const std::exception&) {
                return "";  // not a number: the conversion to int says so
            }
            if (used != input.size()) return "";
            return threads_problem(count);
        },
        "0..4 per processor");
    return command.add_option("--threads", threads, description)->check(bounded);
}

}  // namespace mixgpt::cli
