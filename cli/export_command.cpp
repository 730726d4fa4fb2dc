// `mixgpt export`: flags onto interop::ExportOptions; prints what was written.
#include <iostream>

#include "cli/commands.h"
#include "cli/toml_config.h"
#include "core/log.h"
#include "interop/export.h"

namespace mixgpt::cli {

void add_export_command(CLI::App& app) {
    auto options = std::make_shared<interop::ExportOptions>();
    CLI::App* command = app.add_subcommand(
        "export",
        "write a checkpoint as a Hugging Face GPT2LMHeadModel folder (safetensors, config, tokenizer)");
    add_config_option(*command);
    command
        ->add_option("checkpoint,--checkpoint", options->source,
                     "checkpoint file, or a run directory (its newest valid checkpoint)")
        ->required();
    command->add_option("--output,-o", options->output, "the folder to write")->required();
    command->add_option("--dtype", options->dtype, "fp32, bf16 or fp16 (rounded from the FP32 masters)")
        ->capture_default_str();
    command->add_option("--tokenizer", options->tokenizer, "tokenizer model (default: the checkpoint's)");
    command->add_flag("--force", options->force, "replace an existing non-empty output folder");
    command->callback([options] {
        const interop::ExportResult result = interop::export_hf(*options);
        std::cout << format("exported %s (step %lld) to %s: %d tensors, model.safetensors %.1f MB (%s)\n",
                            result.checkpoint.c_str(), static_cast<long long>(result.step),
                            options->output.c_str(), result.tensors,
                            static_cast<double>(result.safetensors_bytes) / 1e6, options->dtype.c_str());
    });
}

}  // namespace mixgpt::cli
