// mixgpt: one binary, subcommands as in git. Every exception ends here as one
// line on stderr and a non-zero exit status; one that would end the process as
// std::terminate (thrown on another thread, or out of a noexcept function) too.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "cli/commands.h"
#include "cli/openmp_waits.h"
#include "cli/out_of_memory.h"
#include "core/error.h"

namespace {

// The last resort: one line and status 1 instead of "terminate called ..." and SIGABRT.
[[noreturn]] void report_and_exit() {
    const char* what = "std::terminate without an exception";
    try {
        if (const std::exception_ptr current = std::current_exception()) std::rethrow_exception(current);
    } catch (const std::bad_alloc&) {
        what = "out of memory (std::bad_alloc)";
    } catch (const std::exception& error) {
        what = error.what();
    } catch (...) {
        what = "an exception of unknown type";
    }
    std::fprintf(stderr, "mixgpt: fatal error: %s\n", what);
    std::fflush(stderr);
    std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    mixgpt::cli::settle_openmp_waits(argv);
    std::set_terminate(report_and_exit);
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
    mixgpt::cli::take_one_value_per_flag(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForAllHelp& help) {
        return app.exit(help);
    } catch (const CLI::ParseError& error) {
        std::fprintf(stderr, "mixgpt: %s (see --help)\n", error.what());
        return 2;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "mixgpt: error: out of memory (std::bad_alloc): %s\n",
                     mixgpt::cli::out_of_memory_advice(app).c_str());
        return 1;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "mixgpt: error: %s\n", error.what());
        return 1;
    } catch (...) {
        std::fprintf(stderr, "mixgpt: error: an exception of unknown type\n");
        return 1;
    }
    return 0;
}
