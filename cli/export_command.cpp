// `mixgpt export`: flags onto interop::ExportOptions; prints what was written.
#include <iostream>

#include "cli/commands.h"
#include "cli/threads_option.h"
#include "cli/toml_config.h"
#include "core/log.h"
#include "interop/export.h"
#include "interop/reference_outputs.h"
#include "interop/staging_directory.h"

namespace mixgpt::cli {

void add_export_command(CLI::App& app) {
    auto options = std::make_shared<interop::ExportOptions>();
    auto reference = std::make_shared<interop::ReferenceOptions>();
    CLI::App* command = app.add_subcommand(
        "export",
        "write a checkpoint as a Hugging Face GPT2LMHeadModel or LlamaForCausalLM folder (safetensors, config, tokenizer)");
    add_config_option(*command);
    command
        ->add_option("checkpoint,--checkpoint", options->source,
                     "checkpoint file, or a run directory (its newest valid checkpoint)")
        ->required();
    command->add_option("--output,-o", options->output, "the folder to write")->required();
    command->add_option("--dtype", options->dtype, "fp32, bf16 or fp16 (rounded from the FP32 masters)")
        ->capture_default_str();
    command->add_option("--tokenizer", options->tokenizer, "tokenizer model (default: the checkpoint's)");
    command->add_flag(
        "--force", options->force,
        "replace an existing non-empty output folder (never an input, a file, or a run in use)");
    command->add_flag("--allow-nonfinite", options->allow_nonfinite,
                      "export weights that are NaN or Inf anyway");
    command->add_option(
        "--reference-out", reference->output,
        "also write mixgpt's token ids, logits and greedy continuation here, on the CPU in FP32, "
        "for scripts/hf_transformers_check.py (a non-empty folder is replaced only with --force)");
    command
        ->add_option("--reference-tokens", reference->logits_tokens,
                     "validation tokens whose logits go into --reference-out")
        ->capture_default_str();
    command->add_option("--prompt", reference->prompt, "the greedy continuation's prompt")
        ->capture_default_str();
    command->add_option("--new-tokens", reference->new_tokens, "the greedy continuation's length")
        ->capture_default_str();
    add_threads_option(*command, reference->threads, "CPU threads for --reference-out (0: OpenMP's default)");
    command->callback([options, reference] {
        if (!reference->output.empty())
            interop::require_replaceable(reference->output, options->force,
                                         {options->source, options->output}, "--reference-out");
        const interop::ExportResult result = interop::export_hf(*options);
        std::cout << format("exported %s (step %lld) to %s: %d tensors, model.safetensors %.1f MB (%s)\n",
                            result.checkpoint.c_str(), static_cast<long long>(result.step),
                            options->output.c_str(), result.tensors,
                            static_cast<double>(result.safetensors_bytes) / 1e6, options->dtype.c_str());
        if (result.document_separator >= 0)
            std::cout << format(
                "note: the run trained with --attention-mask document%s (documents end at token %d); "
                "the exported model attends across documents, as Hugging Face's causal models "
                "do: give it one document at a time%s\n",
                result.document_positions ? " --positions document" : "", result.document_separator,
                result.document_positions ? ", starting at position 0" : "");
        if (!reference->output.empty()) {
            reference->source = result.checkpoint;
            reference->force = options->force;
            reference->export_output = options->output;
            interop::write_reference_outputs(*reference);
            std::cout << "wrote mixgpt's reference outputs to " << reference->output << "\n";
        }
    });
}

}  // namespace mixgpt::cli
