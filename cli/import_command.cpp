// `mixgpt import`: flags onto interop::ImportOptions; prints the checkpoint written.
#include <iostream>

#include "cli/commands.h"
#include "cli/toml_config.h"
#include "core/log.h"
#include "interop/import.h"

namespace mixgpt::cli {

void add_import_command(CLI::App& app) {
    auto options = std::make_shared<interop::ImportOptions>();
    CLI::App* command = app.add_subcommand(
        "import",
        "read a Hugging Face GPT2LMHeadModel or LlamaForCausalLM safetensors folder into a run directory (train --resume, eval, sample)");
    add_config_option(*command);
    command->add_option("directory,--directory", options->directory, "the Hugging Face model folder")
        ->required();
    command->add_option("--output,-o", options->output, "the run directory to create")->required();
    command->add_flag(
        "--force", options->force,
        "replace an existing non-empty run directory (never an input, a file, or a run in use)");
    command->add_flag("--allow-nonfinite", options->allow_nonfinite,
                      "import weights that are NaN or Inf anyway");
    command->callback([options] {
        const interop::ImportResult result = interop::import_hf(*options);
        std::cout << format("imported %s (%d layers, %d heads, width %d, context %d, vocabulary %d) as %s\n",
                            options->directory.c_str(), result.config.n_layer, result.config.n_head,
                            result.config.n_embd, result.config.max_seq_len, result.config.vocab_size,
                            result.checkpoint.c_str());
    });
}

}  // namespace mixgpt::cli
