#include "cli/optimizer_options.h"

#include "core/error.h"

namespace mixgpt::cli {

void add_optimizer_options(CLI::App& command, OptimizerArguments& arguments, TrainOptions& options) {
    command
        .add_option("--optimizer", arguments.optimizer,
                    "adamw, or muon: Muon for the blocks' weight matrices (q, k, v, gate and up each its "
                    "own), AdamW for embeddings, head, norms and biases")
        ->capture_default_str()
        ->group("Optimizer");
    const auto muon = [&](CLI::Option* option) {
        arguments.muon_options.push_back(option->group("Muon (--optimizer muon)"));
        return option;
    };
    muon(command.add_option("--muon-lr", options.muon_lr, "peak learning rate of the Muon matrices"))
        ->capture_default_str();
    muon(command.add_option("--muon-momentum", options.muon_momentum, "momentum mu"))->capture_default_str();
    muon(command.add_option("--muon-nesterov", options.muon_nesterov,
                            "true: Nesterov blend (1 - mu) g + mu m; false: the momentum m"))
        ->capture_default_str();
    muon(command.add_option("--muon-ns-steps", options.muon_ns_steps, "quintic Newton-Schulz iterations"))
        ->capture_default_str();
    muon(command.add_option("--muon-ns-precision", arguments.muon_ns_precision,
                            "the Newton-Schulz iterate in bf16 or fp32 (fp32 sums either way)"))
        ->capture_default_str();
    muon(command.add_option("--muon-weight-decay", options.muon_weight_decay,
                            "decoupled weight decay of the Muon matrices (W -= muon-lr * this * W)"))
        ->capture_default_str();
    muon(command.add_option("--embedding-lr", options.embedding_lr,
                            "peak AdamW learning rate of the embeddings and a tied head (default: 30 x --lr)"));
    muon(command.add_option("--head-lr", options.head_lr,
                            "peak AdamW learning rate of an untied output head (default: 3 x --lr)"));
}

void parse_optimizer_arguments(const OptimizerArguments& arguments, TrainOptions& options) {
    options.optimizer = parse_optimizer(arguments.optimizer);
    for (const CLI::Option* option : arguments.muon_options)
        if (option->count() > 0 && options.optimizer != OptimizerKind::muon)
            throw Error(option->get_name() + ": only with --optimizer muon (the optimizer is " +
                        optimizer_name(options.optimizer) + ")");
    if (arguments.muon_ns_precision == "bf16")
        options.muon_ns_dtype = DType::bf16;
    else if (arguments.muon_ns_precision == "fp32")
        options.muon_ns_dtype = DType::f32;
    else
        throw Error("--muon-ns-precision: '" + arguments.muon_ns_precision + "' is not one of bf16, fp32");
}

}  // namespace mixgpt::cli
