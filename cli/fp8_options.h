// The --fp8-* flags of `train` (what --precision fp8 multiplies in FP8 and how it scales), as
// text first and parsed into model/fp8_linears.h's Fp8Options once the command line is read.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "kernels/precision.h"
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
    std::vector<const CLI::Option*> options;  // the flags above, to see which were given
};

void add_fp8_options(CLI::App& command, Fp8Arguments& arguments);
// Throws Error naming the flag on a bad value, and on any flag given with a precision other than
// fp8 (ignored, it would say nothing; as model options of the other family are refused).
Fp8Options parse_fp8_arguments(const Fp8Arguments& arguments, Precision precision);

}  // namespace mixgpt::cli
