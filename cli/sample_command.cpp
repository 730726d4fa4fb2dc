// `mixgpt sample`: flags (or a TOML file) onto SampleOptions; prints each sample.
#include <iostream>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/threads_option.h"
#include "cli/toml_config.h"
#include "eval/run_sample.h"

namespace mixgpt::cli {

void add_sample_command(CLI::App& app) {
    auto options = std::make_shared<SampleOptions>();
    CLI::App* command = app.add_subcommand("sample", "generate text from a checkpoint");
    add_config_option(*command);
    command
        ->add_option("checkpoint,--checkpoint", options->checkpoint,
                     "checkpoint file, or a run directory (its newest valid checkpoint)")
        ->required();
    command->add_option("--prompt,-p", options->prompt, "text to continue (default: a new document)");
    command->add_option("--max-new-tokens,-n", options->max_new_tokens, "tokens to generate at most")
        ->capture_default_str();
    command->add_option("--num-samples", options->num_samples, "independent samples (one batch)")
        ->capture_default_str();
    command->add_option("--temperature", options->sampling.temperature, "softmax temperature; 0: greedy")
        ->capture_default_str();
    command->add_option("--top-k", options->sampling.top_k, "keep the k most likely tokens (0: all)")
        ->capture_default_str();
    command
        ->add_option("--top-p", options->sampling.top_p,
                     "nucleus: keep the most likely tokens up to this mass")
        ->capture_default_str();
    command->add_option("--seed", options->seed, "random seed")->capture_default_str();
    command->add_flag("!--no-stop", options->stop_at_end_of_text, "continue past the end-of-text token");
    command->add_option("--tokenizer", options->tokenizer, "tokenizer model (default: the checkpoint's)");
    add_device_option(*command, options->device.device);
    command->add_option("--device-index", options->device.device_index, "CUDA device ordinal");
    add_threads_option(*command, options->device.threads, "CPU threads (0: OpenMP's default)");
    command->add_flag("--allow-nonfinite", options->allow_nonfinite,
                      "use weights that are NaN or Inf anyway");
    command->add_option("--precision", options->device.precision,
                        "fp32, tf32, bf16, fp16, fp8 (default: training's)");
    command->callback([options] {
        const std::vector<std::string> texts = run_sampling(*options);
        for (size_t i = 0; i < texts.size(); ++i) {
            if (texts.size() > 1) std::cout << "--- sample " << i + 1 << " ---\n";
            std::cout << options->prompt << texts[i] << "\n";
        }
    });
}

}  // namespace mixgpt::cli
