// The --fp8-* flags of `train` (what --precision fp8 multiplies in FP8 and how it scales), as
// text first and parsed into model/fp8_linears.h's Fp8Options once the command line is read.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "model/fp8_linears.h"

namespace mixgpt::cli {

struct Fp8Arguments {
    std::string format = "hybrid";
    std::string scaling = "delayed";
    int amax_history = 1024;
    std::string amax_compute = "max";
    int margin = 0;
    std::string bf16_layers;
    bool head = false;
};

void add_fp8_options(CLI::App& command, Fp8Arguments& arguments);
// Throws Error naming the flag on a bad value.
Fp8Options parse_fp8_arguments(const Fp8Arguments& arguments);

}  // namespace mixgpt::cli
