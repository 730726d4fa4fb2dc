// The --optimizer and --muon-*, --embedding-lr, --head-lr flags of `train` (train/README.md,
// "Optimizers"): onto TrainOptions, with the Muon flags refused unless --optimizer muon.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "train/train_options.h"

namespace mixgpt::cli {

struct OptimizerArguments {
    std::string optimizer = "adamw";
    std::string muon_ns_precision = "bf16";
    std::vector<const CLI::Option*> muon_options;  // the flags that mean something with muon only
};

// The numbers go straight into `options`; the names into `arguments`, for parse_optimizer_arguments.
void add_optimizer_options(CLI::App& command, OptimizerArguments& arguments, TrainOptions& options);
// Sets options.optimizer and options.muon_ns_dtype; throws Error naming the flag on a bad name and
// on a Muon flag given without --optimizer muon (ignored, it would say nothing).
void parse_optimizer_arguments(const OptimizerArguments& arguments, TrainOptions& options);

}  // namespace mixgpt::cli
