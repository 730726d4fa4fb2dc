// mixgpt: one binary, subcommands as in git. Every exception ends here as one
// line on stderr and a non-zero exit status.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
    CLI::App app{
        "mixgpt: pretrain, evaluate and benchmark GPT language models in mixed precision "
        "(FP32, TF32, BF16, FP16) on CPUs and NVIDIA GPUs.",
        "mixgpt"};
    app.require_subcommand(1);
    app.fallthrough(false);
    mixgpt::cli::add_prepare_command(app);
    mixgpt::cli::add_train_command(app);
    mixgpt::cli::add_eval_command(app);
    mixgpt::cli::add_sample_command(app);
    mixgpt::cli::add_bench_command(app);
    mixgpt::cli::add_study_command(app);
    mixgpt::cli::add_info_command(app);
    mixgpt::cli::add_export_command(app);
    mixgpt::cli::add_import_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForAllHelp& help) {
        return app.exit(help);
    } catch (const CLI::ParseError& error) {
        std::fprintf(stderr, "mixgpt: %s (see --help)\n", error.what());
        return 2;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "mixgpt: error: %s\n", error.what());
        return 1;
    }
    return 0;
}
